package dev.gpucompute.sample.web;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpInputMessage;
import org.springframework.http.HttpOutputMessage;
import org.springframework.http.MediaType;
import org.springframework.http.converter.AbstractHttpMessageConverter;
import org.springframework.http.converter.HttpMessageNotReadableException;

import dev.gpucompute.sample.search.Hit;

/**
 * Writes a search answer in the compact binary form {@value #MEDIA_TYPE_VALUE}, which a client asks
 * for with {@code Accept}; without it the answer is JSON. Little-endian throughout:
 *
 * <pre>
 * uint32  queries                   Q
 * uint32  k                         hits per query (every query has k)
 * float32 scores[Q * k]             query-major, best first
 * uint32  idOffsets[Q * k + 1]      idOffsets[0] = 0; hit i's id is utf8[idOffsets[i], idOffsets[i + 1])
 * byte    utf8[idOffsets[Q * k]]    the ids, UTF-8, back to back
 * </pre>
 *
 * The scores and offsets are 4-byte aligned at their offsets 8 and {@code 8 + 4Qk}, so a client can
 * view them in place ({@code numpy.frombuffer}). Write-only; stateless and thread-safe.
 */
final class HitsMessageConverter extends AbstractHttpMessageConverter<CollectionsController.SearchResponse> {

	/** The binary answer's media type. */
	static final String MEDIA_TYPE_VALUE = "application/vnd.gpu-compute.hits";

	static final MediaType MEDIA_TYPE = MediaType.parseMediaType(MEDIA_TYPE_VALUE);

	HitsMessageConverter() {
		super(MEDIA_TYPE);
	}

	@Override
	protected boolean supports(Class<?> type) {
		return CollectionsController.SearchResponse.class.isAssignableFrom(type);
	}

	@Override
	protected boolean canRead(@Nullable MediaType mediaType) {
		return false;
	}

	@Override
	protected CollectionsController.SearchResponse readInternal(Class<? extends CollectionsController.SearchResponse> type,
			HttpInputMessage input) {
		throw new HttpMessageNotReadableException("Search answers are written, not read", input);
	}

	@Override
	protected void writeInternal(CollectionsController.SearchResponse response, HttpOutputMessage output)
			throws IOException {
		byte[] body = encode(response.results());
		output.getHeaders().setContentLength(body.length);
		try (OutputStream out = output.getBody()) {
			out.write(body);
		}
	}

	/** The answer in the binary form. */
	static byte[] encode(List<List<Hit>> results) {
		int queries = results.size();
		int k = results.isEmpty() ? 0 : results.get(0).size();
		int hits = queries * k;
		byte[][] ids = new byte[hits][];
		int idBytes = 0;
		for (int q = 0; q < queries; q++) {
			List<Hit> row = results.get(q);
			if (row.size() != k) {
				throw new IllegalArgumentException("query " + q + " has " + row.size() + " hits, not " + k);
			}
			for (int r = 0; r < k; r++) {
				ids[q * k + r] = row.get(r).id().getBytes(StandardCharsets.UTF_8);
				idBytes += ids[q * k + r].length;
			}
		}
		ByteBuffer buffer = ByteBuffer.allocate(8 + 4 * hits + 4 * (hits + 1) + idBytes).order(ByteOrder.LITTLE_ENDIAN);
		buffer.putInt(queries).putInt(k);
		for (List<Hit> row : results) {
			for (Hit hit : row) {
				buffer.putFloat(hit.score());
			}
		}
		int offset = 0;
		buffer.putInt(offset);
		for (byte[] id : ids) {
			offset += id.length;
			buffer.putInt(offset);
		}
		for (byte[] id : ids) {
			buffer.put(id);
		}
		return buffer.array();
	}

}
