package dev.gpucompute.autoconfigure.web;

import java.time.Duration;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.WebApplicationContext;

import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.autoconfigure.QuietOutputExtension;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * An application advice with a catch-all for {@code Exception}, which Spring MVC asks before the
 * starter's handler for every failure, leaves GPU failures to the starter through
 * {@link GpuExceptionHandler#answer(Throwable)}: they get the starter's mapping, adjusted by the
 * application's {@link GpuProblemCustomizer}, and everything else gets the application's own answer.
 */
@SpringBootTest(classes = GpuProblemDetailsCatchAllTests.App.class,
		properties = { "gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=1", "gpu.streams.max-size=1" })
@ExtendWith(QuietOutputExtension.class)
class GpuProblemDetailsCatchAllTests {

	@Autowired
	private WebApplicationContext context;

	private MockMvc mvc;

	@BeforeEach
	void mockMvc() {
		this.mvc = MockMvcBuilders.webAppContextSetup(this.context).build();
	}

	@Test
	void gpuFailuresReachingACatchAllGetTheStartersAnswer() throws Exception {
		this.mvc.perform(get("/allocate"))
			.andExpect(status().isServiceUnavailable())
			.andExpect(content().contentType("application/problem+json"))
			.andExpect(jsonPath("$.type").value("urn:gpu-compute:problem:out-of-memory"))
			.andExpect(jsonPath("$.title").value("GPU out of memory"))
			.andExpect(jsonPath("$.instance").value("/allocate"))
			.andExpect(header().doesNotExist("Retry-After"));
		this.mvc.perform(get("/group"))
			.andExpect(status().isInternalServerError())
			.andExpect(jsonPath("$.type").value("urn:gpu-compute:problem:pool-too-small"));
	}

	@Test
	void customizersAdjustTheAnswerOfAWrappedFailure() throws Exception {
		this.mvc.perform(get("/future-get"))
			.andExpect(status().isServiceUnavailable())
			.andExpect(jsonPath("$.type").value("urn:gpu-compute:problem:pool-exhausted"))
			.andExpect(jsonPath("$.title").value("Busy, try later"))
			.andExpect(jsonPath("$.hint").value("fewer queries per request"))
			// 6001 ms, rounded up to whole seconds.
			.andExpect(header().string("Retry-After", "7"));
	}

	@Test
	void everythingElseGetsTheApplicationsOwnAnswer() throws Exception {
		this.mvc.perform(get("/not-gpu"))
			.andExpect(status().isBadGateway())
			.andExpect(content().string("the application's own answer to CompletionException"));
	}

	@RestControllerAdvice
	static class CatchAllAdvice {

		private final GpuExceptionHandler gpuFailures;

		CatchAllAdvice(GpuExceptionHandler gpuFailures) {
			this.gpuFailures = gpuFailures;
		}

		@ExceptionHandler(Exception.class)
		ResponseEntity<?> unexpected(Exception ex) {
			return this.gpuFailures.answer(ex)
				.<ResponseEntity<?>>map((answer) -> answer)
				.orElseGet(() -> ResponseEntity.status(HttpStatus.BAD_GATEWAY)
					.body("the application's own answer to " + ex.getClass().getSimpleName()));
		}

	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import({ FailingController.class, CatchAllAdvice.class })
	static class App {

		@Bean
		GpuProblemCustomizer busyTitle() {
			return (problem) -> {
				if (problem.failure() instanceof PoolExhaustedException) {
					problem.body().setTitle("Busy, try later");
					problem.body().setProperty("hint", "fewer queries per request");
					problem.setRetryAfter(Duration.ofMillis(6001));
				}
			};
		}

	}

}
