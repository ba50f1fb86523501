package dev.gpucompute.sample.web;

import java.net.URI;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;

import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The error page ({@code /error}) in the service's problem format, replacing Boot's
 * {@code BasicErrorController}: what fails outside Spring MVC's exception handling (a filter, the
 * servlet container's own errors) is answered like everything else, as
 * {@code application/problem+json} with a {@value ProblemDetailsAdvice#TYPE_PREFIX} type.
 */
@RestController
class ProblemErrorController implements ErrorController {

	@RequestMapping("${server.error.path:${error.path:/error}}")
	ResponseEntity<ProblemDetail> error(HttpServletRequest request) {
		Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
		HttpStatus status = (code instanceof Integer value && HttpStatus.resolve(value) != null) ? HttpStatus.valueOf(value)
				: HttpStatus.INTERNAL_SERVER_ERROR;
		String slug = status.getReasonPhrase().toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9]+", "-");
		ProblemDetail body = ProblemDetail.forStatusAndDetail(status,
				"The request failed before the service could handle it (" + status.value() + " " + status.getReasonPhrase()
						+ ")");
		body.setType(URI.create(ProblemDetailsAdvice.TYPE_PREFIX + slug));
		body.setTitle(status.getReasonPhrase());
		Object uri = request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI);
		body.setInstance(URI.create((uri != null) ? uri.toString() : request.getRequestURI()));
		return ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(body);
	}

}
