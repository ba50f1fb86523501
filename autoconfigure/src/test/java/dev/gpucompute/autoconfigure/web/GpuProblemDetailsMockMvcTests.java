package dev.gpucompute.autoconfigure.web;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.WebApplicationContext;

import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.QuietOutputExtension;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The problem details in Spring MVC through MockMvc, next to handlers of the application's own:
 * an {@code @ExceptionHandler} in a controller and a {@code @RestControllerAdvice} of the
 * application each win for what they handle; the GPU handler answers the rest.
 */
@SpringBootTest(classes = GpuProblemDetailsMockMvcTests.App.class,
		properties = { "gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=1", "gpu.streams.max-size=1" })
@ExtendWith(QuietOutputExtension.class)
class GpuProblemDetailsMockMvcTests {

	@Autowired
	private WebApplicationContext context;

	@Autowired
	private StreamPool pool;

	private MockMvc mvc;

	@BeforeEach
	void mockMvc() {
		this.mvc = MockMvcBuilders.webAppContextSetup(this.context).build();
	}

	@Test
	void gpuFailuresAreProblemDetails() throws Exception {
		this.mvc.perform(get("/allocate"))
			.andExpect(status().isServiceUnavailable())
			.andExpect(content().contentType("application/problem+json"))
			.andExpect(jsonPath("$.type").value("urn:gpu-compute:problem:out-of-memory"))
			.andExpect(jsonPath("$.instance").value("/allocate"));
		this.mvc.perform(get("/kernel"))
			.andExpect(status().isInternalServerError())
			.andExpect(jsonPath("$.kernel").value("out_of_bounds"))
			.andExpect(jsonPath("$.detail").value("GPU kernel 'out_of_bounds' failed."));
	}

	@Test
	void theApplicationsOwnAdviceWinsForWhatItHandles() throws Exception {
		try (StreamLease held = this.pool.acquire()) {
			this.mvc.perform(get("/lease"))
				.andExpect(status().isTooManyRequests())
				.andExpect(content().string("the application's own answer"))
				.andExpect(header().doesNotExist("Retry-After"));
		}
		// A pool-exhausted failure wrapped by a future reaches the application's advice too.
		this.mvc.perform(get("/future-get")).andExpect(status().isTooManyRequests());
	}

	@Test
	void aControllersOwnExceptionHandlerWins() throws Exception {
		this.mvc.perform(get("/own/allocate"))
			.andExpect(status().isInsufficientStorage())
			.andExpect(content().string("the controller's own answer"));
	}

	@RestController
	static class OwnHandlerController {

		private final FailingController failing;

		OwnHandlerController(FailingController failing) {
			this.failing = failing;
		}

		@GetMapping("/own/allocate")
		String allocate() {
			return this.failing.allocate();
		}

		@ExceptionHandler(GpuOutOfMemoryException.class)
		ResponseEntity<String> outOfMemory(GpuOutOfMemoryException ex) {
			return ResponseEntity.status(HttpStatus.INSUFFICIENT_STORAGE).body("the controller's own answer");
		}

	}

	@RestControllerAdvice
	static class ApplicationAdvice {

		@ExceptionHandler(PoolExhaustedException.class)
		ResponseEntity<String> busy(PoolExhaustedException ex) {
			return ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS).body("the application's own answer");
		}

	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import({ FailingController.class, OwnHandlerController.class, ApplicationAdvice.class })
	static class App {

	}

}
