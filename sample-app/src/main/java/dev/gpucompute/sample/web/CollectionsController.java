package dev.gpucompute.sample.web;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import jakarta.servlet.http.HttpServletRequest;

import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.sample.search.BatchedSearches;
import dev.gpucompute.sample.search.CollectionInfo;
import dev.gpucompute.sample.search.CollectionStore;
import dev.gpucompute.sample.search.Hit;
import dev.gpucompute.sample.search.Metric;
import dev.gpucompute.sample.search.ServiceProblem;
import dev.gpucompute.sample.search.Vectors;

/**
 * The REST API of the search service. Bodies are read through {@link RequestBodies} (size limit
 * first), every input is checked before the store touches the device, and every refusal is a
 * {@link ServiceProblem} that {@link ProblemDetailsAdvice} answers as an RFC 9457 problem detail.
 */
@RestController
@RequestMapping("/collections")
class CollectionsController {

	/** Header carrying the ids of a binary upload, comma-separated. */
	static final String IDS_HEADER = "X-Vector-Ids";

	private final CollectionStore store;

	private final BatchedSearches searches;

	private final RequestBodies bodies;

	CollectionsController(CollectionStore store, BatchedSearches searches, RequestBodies bodies) {
		this.store = store;
		this.searches = searches;
		this.bodies = bodies;
	}

	/** {@code PUT /collections/{name}} with {@code {"dimension": 384, "metric": "cosine"}}. */
	record CreateRequest(Integer dimension, String metric) {
	}

	/**
	 * A collection as the API shows it; {@code devices} says where its vectors are: one entry per
	 * shard, in slot order ({@code [{"device":0,"vectors":1500}]} on one device).
	 */
	record CollectionView(String name, int dimension, String metric, int size, List<CollectionInfo.Placement> devices) {

		static CollectionView of(CollectionInfo info) {
			return new CollectionView(info.name(), info.dimension(), info.metric().jsonName(), info.size(),
					info.placements());
		}

	}

	/** {@code POST /collections/{name}/vectors} as JSON. */
	record UpsertRequest(List<String> ids, float[][] vectors) {
	}

	/** The outcome of a write: vectors added, vectors replaced, and the collection's size after. */
	record UpsertResponse(int added, int replaced, int size) {
	}

	/** {@code POST /collections/{name}/search}. */
	record SearchRequest(float[][] vectors, Integer k) {
	}

	/** One list of hits per query, best first. */
	record SearchResponse(List<List<Hit>> results) {
	}

	@PutMapping("/{name}")
	ResponseEntity<CollectionView> create(@PathVariable String name, HttpServletRequest request) {
		CreateRequest body = this.bodies.json(request, CreateRequest.class);
		Metric metric = (body.metric() != null) ? Metric.fromJson(body.metric()) : Metric.COSINE;
		CollectionStore.Created created = this.store.create(name, body.dimension(), metric);
		CollectionView view = CollectionView.of(created.info());
		if (created.created()) {
			return ResponseEntity.created(URI.create("/collections/" + name)).body(view);
		}
		return ResponseEntity.ok(view);
	}

	@GetMapping
	List<CollectionView> list() {
		return this.store.list().stream().map(CollectionView::of).toList();
	}

	@GetMapping("/{name}")
	CollectionView get(@PathVariable String name) {
		return CollectionView.of(this.store.get(name));
	}

	@DeleteMapping("/{name}")
	ResponseEntity<Void> delete(@PathVariable String name) {
		this.store.delete(name);
		return ResponseEntity.noContent().build();
	}

	@PostMapping(path = "/{name}/vectors", consumes = MediaType.APPLICATION_JSON_VALUE)
	UpsertResponse upsertJson(@PathVariable String name, HttpServletRequest request) {
		CollectionInfo shape = this.store.get(name);
		UpsertRequest body = this.bodies.json(request, UpsertRequest.class);
		if (body.ids() == null) {
			throw ServiceProblem.invalid("ids", "ids is required");
		}
		if (body.vectors() == null) {
			throw ServiceProblem.invalid("vectors", "vectors is required");
		}
		if (body.ids().size() != body.vectors().length) {
			throw ServiceProblem.invalid("ids",
					body.ids().size() + " ids were given for " + body.vectors().length + " vectors");
		}
		float[] rows = Vectors.flatten(name, "vectors", body.vectors(), shape.dimension());
		return upserted(this.store.upsertOwned(name, body.ids(), rows));
	}

	/**
	 * {@code POST /collections/{name}/vectors} with {@code Content-Type: application/octet-stream}:
	 * little-endian float32 rows, back to back. The ids come from, in order of precedence, the
	 * {@code ids} query parameter (comma-separated, may repeat), the {@value #IDS_HEADER} header
	 * (comma-separated), or {@code idPrefix} with an optional {@code idStart}, which names the rows
	 * {@code <idPrefix><idStart>}, {@code <idPrefix><idStart + 1>}, ... for bulk loads whose ids would
	 * not fit a URL or header.
	 */
	@PostMapping(path = "/{name}/vectors", consumes = MediaType.APPLICATION_OCTET_STREAM_VALUE)
	UpsertResponse upsertBinary(@PathVariable String name, HttpServletRequest request,
			@RequestHeader(name = IDS_HEADER, required = false) String idsHeader,
			@RequestParam(name = "idPrefix", required = false) String idPrefix,
			@RequestParam(name = "idStart", required = false) Long idStart) {
		CollectionInfo shape = this.store.get(name);
		RequestBodies.Floats body = this.bodies.readFloats(request);
		long rowBytes = (long) shape.dimension() * Float.BYTES;
		if (body.bytes() == 0) {
			throw ServiceProblem.invalid("body", "At least one vector is required");
		}
		if (body.bytes() % rowBytes != 0) {
			throw ServiceProblem.bodyNotWholeRows(name, body.bytes(), shape.dimension());
		}
		int rows = (int) (body.bytes() / rowBytes);
		List<String> ids = binaryIds(request.getParameterValues("ids"), idsHeader, idPrefix, idStart, rows);
		if (ids.size() != rows) {
			throw ServiceProblem.invalid("ids", ids.size() + " ids were given for " + rows + " vectors of dimension "
					+ shape.dimension() + " (" + body.bytes() + " bytes)");
		}
		// The array is this request's own: the store may normalise it in place.
		return upserted(this.store.upsertOwned(name, ids, body.values()));
	}

	private static List<String> binaryIds(String[] params, String header, String prefix, Long start, int rows) {
		if (params != null && params.length > 0) {
			List<String> ids = new ArrayList<>();
			for (String param : params) {
				Collections.addAll(ids, param.split(",", -1));
			}
			return ids;
		}
		if (header != null) {
			return List.of(header.split(",", -1));
		}
		if (prefix != null) {
			long first = (start != null) ? start : 0;
			List<String> ids = new ArrayList<>(rows);
			for (int i = 0; i < rows; i++) {
				ids.add(prefix + (first + i));
			}
			return ids;
		}
		throw ServiceProblem.invalid("ids", "A binary upload needs its ids: the 'ids' query parameter, the "
				+ IDS_HEADER + " header (both comma-separated) or the 'idPrefix' query parameter");
	}

	/**
	 * {@code POST /collections/{name}/search} with a JSON body {@code {"vectors": [[...], ...], "k": 10}}.
	 * The answer is JSON, or the binary form of {@link HitsMessageConverter} when {@code Accept} asks
	 * for {@value HitsMessageConverter#MEDIA_TYPE_VALUE}.
	 */
	@PostMapping(path = "/{name}/search", consumes = MediaType.APPLICATION_JSON_VALUE,
			produces = { MediaType.APPLICATION_JSON_VALUE, HitsMessageConverter.MEDIA_TYPE_VALUE })
	SearchResponse search(@PathVariable String name, HttpServletRequest request) {
		CollectionInfo shape = this.store.get(name);
		SearchRequest body = this.bodies.json(request, SearchRequest.class);
		if (body.k() == null) {
			throw ServiceProblem.invalid("k", "k is required");
		}
		if (body.vectors() == null || body.vectors().length == 0) {
			throw ServiceProblem.invalid("vectors", "At least one query vector is required");
		}
		float[] queries = Vectors.flatten(name, "vectors", body.vectors(), shape.dimension());
		// Small requests join a batch of concurrent ones; the answers are the same as alone.
		return new SearchResponse(this.searches.search(shape, queries, body.k()));
	}

	/**
	 * {@code POST /collections/{name}/search?k=10} with {@code Content-Type: application/octet-stream}:
	 * the query vectors as little-endian float32 rows of the collection's dimension, back to back (as
	 * the binary upload takes them), {@code k} as a query parameter. The same checks and problem
	 * details as the JSON search (a value {@code j} of row {@code r} is named {@code vectors[r][j]});
	 * a body whose length is no multiple of a row is a {@code wrong-dimension} problem, a query
	 * parameter other than {@code k} an {@code invalid-request}. The answer is negotiated as for the
	 * JSON search, and a small request joins a batch of concurrent ones as the JSON search does (the
	 * same answers as alone).
	 */
	@PostMapping(path = "/{name}/search", consumes = MediaType.APPLICATION_OCTET_STREAM_VALUE,
			produces = { MediaType.APPLICATION_JSON_VALUE, HitsMessageConverter.MEDIA_TYPE_VALUE })
	SearchResponse searchBinary(@PathVariable String name, HttpServletRequest request) {
		CollectionInfo shape = this.store.get(name);
		for (String parameter : request.getParameterMap().keySet()) {
			if (!parameter.equals("k")) {
				throw ServiceProblem.invalid(parameter,
						"Unknown query parameter '" + parameter + "': a binary search takes k only");
			}
		}
		int k = parseK(request.getParameterValues("k"));
		RequestBodies.Floats body = this.bodies.readFloats(request);
		long rowBytes = (long) shape.dimension() * Float.BYTES;
		if (body.bytes() == 0) {
			throw ServiceProblem.invalid("vectors", "At least one query vector is required");
		}
		if (body.bytes() % rowBytes != 0) {
			throw ServiceProblem.bodyNotWholeRows(name, body.bytes(), shape.dimension());
		}
		return new SearchResponse(this.searches.search(shape, body.values(), k));
	}

	/** {@code k} of a binary search: one integer, else an invalid-request problem naming {@code k}. */
	private static int parseK(String[] values) {
		if (values == null || values.length == 0) {
			throw ServiceProblem.invalid("k", "k is required (a query parameter of a binary search)");
		}
		if (values.length > 1) {
			throw ServiceProblem.invalid("k", "k is given " + values.length + " times");
		}
		try {
			return Integer.parseInt(values[0].strip());
		}
		catch (NumberFormatException ex) {
			throw ServiceProblem.invalid("k", "k must be an integer, got '" + values[0] + "'");
		}
	}

	private static UpsertResponse upserted(CollectionStore.Upserted upserted) {
		return new UpsertResponse(upserted.added(), upserted.replaced(), upserted.size());
	}

}
