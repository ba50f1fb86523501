package dev.gpucompute.sample.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.mock.web.MockHttpServletRequest;

import dev.gpucompute.sample.SampleProperties;
import dev.gpucompute.sample.search.ServiceProblem;

/**
 * Every way a JSON body can be unreadable is described in the request's terms: the JSON path and the
 * type the request has there for a value of the wrong type, the fields for an unknown one, and for
 * malformed JSON the line and column, what was found and what JSON allows there. None of Jackson's own
 * wording (Java types, coercion settings, its redacted source description) reaches the detail.
 */
class JsonErrorsTests {

	private final RequestBodies bodies = new RequestBodies(new SampleProperties(), JsonMapper.builder().build());

	private static final Map<String, Class<?>> TYPES = Map.of("search", CollectionsController.SearchRequest.class,
			"upsert", CollectionsController.UpsertRequest.class, "create", CollectionsController.CreateRequest.class);

	@ParameterizedTest(name = "{0}: {1}")
	@CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
			search | {"vectors":[[1,1]],"k":"2"}        | k             | k must be an integer, got a string ("2")
			search | {"vectors":[[1,1]],"k":1.5}        | k             | k must be an integer, got 1.5
			search | {"vectors":[[1,1]],"k":true}       | k             | k must be an integer, got true
			search | {"vectors":[[1,1]],"k":[1]}        | k             | k must be an integer, got an array
			search | {"vectors":[[1,1]],"k":99999999999} | k            | k must be an integer, got a number out of its range
			search | {"vectors":[[1,"1"]],"k":1}        | vectors[0][1] | vectors[0][1] must be a number, got a string ("1")
			search | {"vectors":[[1,null]],"k":1}       | vectors[0][1] | vectors[0][1] must be a number, got null
			search | {"vectors":[[1,[2]]],"k":1}        | vectors[0][1] | vectors[0][1] must be a number, got an array
			search | {"vectors":[1,2],"k":1}            | vectors[0]    | vectors[0] must be an array of numbers, got 1
			search | {"vectors":{"a":1},"k":1}          | vectors       | vectors must be an array of arrays of numbers, got an object
			search | {"vectors":[[1,1]],"k":1,"kk":2}   | kk            | Unknown field 'kk': this request has the fields vectors and k
			upsert | {"ids":[1],"vectors":[[1,1]]}      | ids[0]        | ids[0] must be a string, got 1
			upsert | {"ids":"a","vectors":[[1,1]]}      | ids           | ids must be an array of strings, got a string ("a")
			create | {"dimension": 2.0}                 | dimension     | dimension must be an integer, got 2.0
			create | {"dimension": 2, "metric": ["dot"]} | metric       | metric must be a string, got an array
			""")
	void aValueOfTheWrongTypeNamesItsPathAndTheTypeExpected(String type, String body, String field, String detail) {
		ServiceProblem problem = problem(type, body);
		assertThat(problem.properties()).containsEntry("field", field);
		assertThat(problem.detail()).isEqualTo(detail);
		assertNoJacksonWording(problem);
	}

	@ParameterizedTest(name = "{0}: {1}")
	@CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
			search | `{"vectors": [[1,2,3,4]], "k": `   | 1 | 31 | Malformed JSON at line 1, column 31 (in k): the body ends; expected a value
			search | `{"vectors": [[1,2,3,4]], "k": 2`  | 1 | 32 | Malformed JSON at line 1, column 32 (after k): the body ends; expected ',' or '}'
			search | `{"vectors": [[1,2`                 | 1 | 18 | Malformed JSON at line 1, column 18 (after vectors[0][1]): the body ends; expected ',' or ']'
			search | `{"vectors": [[1,2,`                | 1 | 19 | Malformed JSON at line 1, column 19 (in vectors[0][2]): the body ends; expected a value
			search | `{"vectors": [["k`                  | 1 | 17 | Malformed JSON at line 1, column 17 (in vectors[0][0]): the body ends inside a string; expected its closing '"'
			search | `{"vectors": [[1,2,3,4], "k": 2}`  | 1 | 28 | Malformed JSON at line 1, column 28 (after vectors[1]): unexpected ':'; expected ',' or ']'
			search | `{vectors:1}`                        | 1 | 2  | Malformed JSON at line 1, column 2: unexpected 'vectors'; expected a field name in double quotes or '}'
			search | `{"vectors":[[1,1]] "k":1}`          | 1 | 20 | Malformed JSON at line 1, column 20 (after vectors): unexpected '"'; expected ',' or '}'
			search | `{"vectors" [[1,1]]}`                | 1 | 12 | Malformed JSON at line 1, column 12 (after vectors): unexpected '['; expected ':'
			search | `{"vectors":[[1,1]],"k":01}`         | 1 | 25 | Malformed JSON at line 1, column 25 (after k): unexpected '1'; expected ',' or '}'
			search | `{"vectors":[[1,1]],"k":1]`          | 1 | 25 | Malformed JSON at line 1, column 25 (after k): unexpected ']'; expected ',' or '}'
			search | `{"vectors":[[1,1]],"k":1}}`         | 1 | 26 | Malformed JSON at line 1, column 26: unexpected '}'; expected the end of the body
			search | `{"vectors":[[1,1.]],"k":1}`         | 1 | 18 | Malformed JSON at line 1, column 18 (in vectors[0][1]): unexpected ']'; expected a digit
			search | `{"vectors":[[1,1]],"k":-}`          | 1 | 25 | Malformed JSON at line 1, column 25 (in k): unexpected '}'; expected a digit
			search | `{"vectors":[[1,1]],,"k":1}`         | 1 | 20 | Malformed JSON at line 1, column 20: unexpected ','; expected a field name in double quotes
			create | `{"metric":"d\\qot"}`               | 1 | 13 | Malformed JSON at line 1, column 13 (in metric): the escape '\\q' in a string; expected one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX
			""")
	void malformedJsonSaysWhereWhatWasFoundAndWhatWasExpected(String type, String body, int line, int column,
			String detail) {
		ServiceProblem problem = problem(type, body);
		assertThat(problem.properties()).containsEntry("field", "body").containsEntry("line", line)
			.containsEntry("column", column);
		assertThat(problem.detail()).isEqualTo(detail);
		assertNoJacksonWording(problem);
	}

	@ParameterizedTest(name = "{0}: {1}")
	@CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
			search | `{"vectors":[[1,1]],\\n "k":tru}` | 2 | 6  | Malformed JSON at line 2, column 6 (in k): unexpected 'tru'; expected a value
			upsert | `{"ids":["a\\nb"]}`              | 1 | 11 | Malformed JSON at line 1, column 11 (in ids[0]): an unescaped control character (U+000A) in a string; expected it escaped, such as \\n for a line break
			""")
	void aLineBreakCountsLinesAndMustBeEscapedInStrings(String type, String body, int line, int column, String detail) {
		ServiceProblem problem = problem(type, body.replace("\\n", "\n"));
		assertThat(problem.properties()).containsEntry("field", "body").containsEntry("line", line)
			.containsEntry("column", column);
		assertThat(problem.detail()).isEqualTo(detail);
		assertNoJacksonWording(problem);
	}

	@ParameterizedTest(name = "{0}")
	@CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
			`[1,2`                             | 0 | 0  | The body must be a JSON object, got an array
			`"hello"`                          | 0 | 0  | The body must be a JSON object, got a string ("hello")
			`42`                               | 0 | 0  | The body must be a JSON object, got 42
			`{"vectors":[[1,1]],"k":1} {}`     | 1 | 27 | Unexpected content after the JSON object at line 1, column 27: the body must hold one JSON object
			""")
	void theTopLevelMustBeOneObject(String body, int line, int column, String detail) {
		ServiceProblem problem = problem("search", body);
		assertThat(problem.properties()).containsEntry("field", "body");
		if (line > 0) {
			assertThat(problem.properties()).containsEntry("line", line).containsEntry("column", column);
		}
		assertThat(problem.detail()).isEqualTo(detail);
		assertNoJacksonWording(problem);
	}

	@ParameterizedTest(name = "bytes {0}")
	@CsvSource({ "'7b 22 6b 22 3a c3 28 7d'", "'ff fe 7b 7d'" })
	void aBodyThatIsNotUtf8SaysSo(String hex) {
		String[] parts = hex.split(" ");
		byte[] body = new byte[parts.length];
		for (int i = 0; i < parts.length; i++) {
			body[i] = (byte) Integer.parseInt(parts[i], 16);
		}
		ServiceProblem problem = problem("search", body);
		assertThat(problem.detail()).startsWith("The body is not valid UTF-8 JSON (at line 1, column ");
		assertNoJacksonWording(problem);
	}

	private ServiceProblem problem(String type, String body) {
		return problem(type, body.getBytes(StandardCharsets.UTF_8));
	}

	private ServiceProblem problem(String type, byte[] body) {
		MockHttpServletRequest request = new MockHttpServletRequest("POST", "/collections/c/search");
		request.setContentType("application/json");
		request.setContent(body);
		ServiceProblem problem = catchThrowableOfType(ServiceProblem.class,
				() -> this.bodies.json(request, TYPES.get(type)));
		assertThat(problem).as("a problem for %s", new String(body, StandardCharsets.UTF_8)).isNotNull();
		assertThat(problem.status()).isEqualTo(400);
		assertThat(problem.type()).isEqualTo("invalid-request");
		return problem;
	}

	private static void assertNoJacksonWording(ServiceProblem problem) {
		assertThat(problem.detail()).doesNotContain("Cannot", "coerce", "CoercionConfig", "Source", "REDACTED",
				"java.", "JsonToken", "`", "marker", "Unrecognized", "deserialize", "dev.gpucompute");
	}

}
