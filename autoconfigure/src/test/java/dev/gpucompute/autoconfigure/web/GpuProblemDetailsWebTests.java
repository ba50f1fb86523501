package dev.gpucompute.autoconfigure.web;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.QuietOutputExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * GPU failures reach HTTP clients of a real Spring MVC server as problem details: pool exhausted 503
 * with Retry-After, a group of streams larger than the pool 500 naming {@code gpu.streams.max-size},
 * out of device memory 503, a kernel failure seen through {@code join()} 500
 * naming the kernel, without stack or device internals; other failures keep Spring Boot's answer.
 */
@SpringBootTest(classes = GpuProblemDetailsWebTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=1", "gpu.streams.max-size=1",
				"gpu.problem-details.retry-after=2500ms" })
@ExtendWith(QuietOutputExtension.class)
class GpuProblemDetailsWebTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private StreamPool pool;

	@Test
	void anExhaustedPoolIs503WithRetryAfter() throws Exception {
		HttpResponse<String> response;
		try (StreamLease held = this.pool.acquire()) {
			response = get("/lease");
		}
		DocumentContext body = problem(response, 503);
		assertThat(response.headers().firstValue("Retry-After")).hasValue("3");
		assertThat(body.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:pool-exhausted");
		assertThat(body.read("$.title", String.class)).isEqualTo("GPU busy");
		assertThat(body.read("$.detail", String.class)).isEqualTo("Every GPU stream is in use; retry later.");
		assertThat(body.read("$.instance", String.class)).isEqualTo("/lease");
		assertThat(get("/lease").statusCode()).as("once the stream is back").isEqualTo(200);
	}

	@Test
	void aGroupOfStreamsLargerThanThePoolIs500NamingTheSettingAndLeavesThePoolFull() throws Exception {
		for (String path : List.of("/group", "/parallel")) {
			HttpResponse<String> response = get(path);
			DocumentContext body = problem(response, 500);
			assertThat(response.headers().firstValue("Retry-After")).as("retrying cannot help").isEmpty();
			assertThat(body.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:pool-too-small");
			assertThat(body.read("$.title", String.class)).isEqualTo("GPU stream pool too small");
			assertThat(body.read("$.detail", String.class)).isEqualTo("The request needs 2 streams at once, but the "
					+ "service's GPU stream pool leases at most 1 at once (gpu.streams.max-size); the service's configuration "
					+ "must change, retrying will not help.");
			assertThat(body.read("$.instance", String.class)).isEqualTo(path);
			assertThat(response.body()).doesNotContain("Exception").doesNotContain("\tat ");
			assertThat(this.pool.stats().active()).as("leases after " + path).isZero();
		}
		assertThat(get("/lease").statusCode()).as("the pool's one stream is free").isEqualTo(200);
	}

	@Test
	void outOfDeviceMemoryIs503() throws Exception {
		HttpResponse<String> response = get("/allocate");
		DocumentContext body = problem(response, 503);
		assertThat(response.headers().firstValue("Retry-After")).isEmpty();
		assertThat(body.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:out-of-memory");
		assertThat(body.read("$.detail", String.class)).doesNotContain("bytes");
	}

	@Test
	void aKernelFailureSeenThroughJoinIs500NamingTheKernelAndNothingElse(CapturedOutput output) throws Exception {
		HttpResponse<String> response = get("/kernel");
		DocumentContext body = problem(response, 500);
		assertThat(body.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:kernel-failed");
		assertThat(body.read("$.detail", String.class)).isEqualTo("GPU kernel 'out_of_bounds' failed.");
		assertThat(body.read("$.kernel", String.class)).isEqualTo("out_of_bounds");
		assertThat(response.body()).doesNotContain("pool-").doesNotContain("Exception").doesNotContain("\tat ")
			.doesNotContain("trace");
		// What the client is not told is in the service's log, with the stack.
		assertThat(output).contains("ERROR").contains("GPU failure answered with 500")
			.contains("KernelLaunchException").contains("\tat ");
	}

	@Test
	void anExecutionExceptionIsUnwrappedToo() throws Exception {
		DocumentContext body = problem(get("/future-get"), 503);
		assertThat(body.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:pool-exhausted");
	}

	@Test
	void aWrappedFailureThatIsNotTheGpusKeepsSpringBootsAnswer() throws Exception {
		HttpResponse<String> response = get("/not-gpu");
		assertThat(response.statusCode()).isEqualTo(500);
		assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(
				(type) -> assertThat(type).doesNotContain("problem"));
		assertThat(response.body()).doesNotContain("urn:gpu-compute");
	}

	static DocumentContext problem(HttpResponse<String> response, int status) {
		assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
		assertThat(response.headers().allValues("Content-Type")).isEqualTo(List.of("application/problem+json"));
		DocumentContext body = JsonPath.parse(response.body());
		assertThat(body.read("$.status", Integer.class)).isEqualTo(status);
		return body;
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path)).build(),
				HttpResponse.BodyHandlers.ofString());
	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import(FailingController.class)
	static class App {

	}

}
