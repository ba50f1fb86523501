package dev.gpucompute.autoconfigure.metrics;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.jayway.jsonpath.JsonPath;

/**
 * The PromQL of the Grafana dashboard shipped in {@code dashboards/gpu-compute-grafana.json}: every
 * panel query, every template-variable query, and the metric names they use.
 */
final class DashboardQueries {

	/** The dashboard, relative to the module directory (Maven runs tests there). */
	static final Path DASHBOARD = Path.of("..", "dashboards", "gpu-compute-grafana.json");

	/** Metrics the dashboard reads from other exporters; they are not in the application's scrape. */
	static final Set<String> EXTERNAL = Set.of("DCGM_FI_DEV_GPU_UTIL");

	private static final Pattern STRING = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"");

	private static final Pattern LABEL_MATCHERS = Pattern.compile("\\{[^}]*\\}");

	private static final Pattern RANGE = Pattern.compile("\\[[^\\]]*\\]");

	private static final Pattern LABEL_LIST = Pattern
		.compile("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)");

	private static final Pattern IDENTIFIER = Pattern.compile("(?<![\\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\\s*\\()?");

	private static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "bool", "offset", "by", "without",
			"on", "ignoring", "group_left", "group_right", "inf", "nan");

	private static final Pattern LABEL_VALUES = Pattern.compile("label_values\\(\\s*([a-zA-Z_:][a-zA-Z0-9_:]*)");

	private final List<String> panelQueries;

	private final List<String> variableQueries;

	private DashboardQueries(List<String> panelQueries, List<String> variableQueries) {
		this.panelQueries = panelQueries;
		this.variableQueries = variableQueries;
	}

	static DashboardQueries load() throws IOException {
		String json = Files.readString(DASHBOARD);
		List<String> panels = JsonPath.read(json, "$.panels[*].targets[*].expr");
		List<Map<String, Object>> variables = JsonPath.read(json, "$.templating.list[?(@.type == 'query')]");
		List<String> variableQueries = new ArrayList<>();
		for (Map<String, Object> variable : variables) {
			Object query = variable.get("query");
			variableQueries.add((query instanceof Map<?, ?> map) ? (String) map.get("query") : (String) query);
		}
		return new DashboardQueries(panels, variableQueries);
	}

	List<String> panelQueries() {
		return this.panelQueries;
	}

	/**
	 * The queries of the panels in the row that Grafana repeats for each value of {@code variable}
	 * (the panels after that row, up to the next row).
	 */
	static List<String> repeatedRowQueries(String variable) throws IOException {
		List<Map<String, Object>> panels = JsonPath.read(Files.readString(DASHBOARD), "$.panels[*]");
		List<String> queries = new ArrayList<>();
		boolean inRow = false;
		for (Map<String, Object> panel : panels) {
			if ("row".equals(panel.get("type"))) {
				inRow = variable.equals(panel.get("repeat"));
			}
			else if (inRow) {
				List<String> expressions = JsonPath.read(panel, "$.targets[*].expr");
				queries.addAll(expressions);
			}
		}
		return queries;
	}

	List<String> variableQueries() {
		return this.variableQueries;
	}

	/** Every metric name read by a panel or a template variable. */
	Set<String> metricNames() {
		Set<String> names = new TreeSet<>();
		for (String query : this.panelQueries) {
			names.addAll(metricNames(query));
		}
		for (String query : this.variableQueries) {
			Matcher matcher = LABEL_VALUES.matcher(query);
			while (matcher.find()) {
				names.add(matcher.group(1));
			}
		}
		return names;
	}

	/**
	 * The metric names in one PromQL expression: identifiers left after removing strings, label
	 * matchers, ranges and label lists, that are neither function calls nor keywords.
	 */
	static Set<String> metricNames(String promql) {
		String stripped = STRING.matcher(promql).replaceAll("\"\"");
		stripped = LABEL_MATCHERS.matcher(stripped).replaceAll(" ");
		stripped = RANGE.matcher(stripped).replaceAll(" ");
		stripped = LABEL_LIST.matcher(stripped).replaceAll(" ");
		Set<String> names = new TreeSet<>();
		Matcher matcher = IDENTIFIER.matcher(stripped);
		while (matcher.find()) {
			boolean call = matcher.group(2) != null;
			String name = matcher.group(1);
			if (!call && !KEYWORDS.contains(name.toLowerCase(java.util.Locale.ROOT))) {
				names.add(name);
			}
		}
		return names;
	}

	/** A panel query made runnable outside Grafana: its variables replaced with match-all values. */
	static String withoutVariables(String promql) {
		return withGpu(promql, ".*");
	}

	/** A panel query made runnable outside Grafana for one value of the {@code gpu} variable, as a repeated row runs it. */
	static String withGpu(String promql, String gpu) {
		return promql.replace("$__rate_interval", "1m")
			.replace("$__range", "5m")
			.replace("$__interval", "15s")
			.replace("$instance", ".*")
			.replace("$gpu", gpu);
	}

}
