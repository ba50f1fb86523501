package dev.gpucompute.autoconfigure;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.AbstractBindHandler;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.boot.context.properties.source.UnboundElementsSourceFilter;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.util.ClassUtils;
import org.springframework.util.ConcurrentReferenceHashMap;
import org.springframework.util.StreamUtils;

import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException.UnknownProperty;
import dev.gpucompute.spi.Suggestions;

/**
 * Finds keys under {@code gpu.} that nothing binds and applies {@code gpu.unknown-properties} to
 * them, before any bean is created (so a misspelled key fails start-up before a device is opened).
 *
 * <p>What is known comes from binding, not from a list: {@link GpuProperties} and every other
 * {@link ConfigurationProperties @ConfigurationProperties} bean whose prefix is {@code gpu} or below
 * it are bound to the environment with a handler that records which keys they consume, as Spring
 * Boot's own {@code ignoreUnknownFields = false} does. Nested groups, lists and map entries (such as
 * {@code gpu.batching.<name>.max-batch-size}) are therefore recognised down to each entry's own
 * keys. Keys that the configuration metadata on the class path declares (bound by code rather than
 * by a properties bean) are known too. Environment variables are not checked, as in Spring Boot:
 * a machine's environment holds variables meant for other programs.
 */
final class UnknownGpuProperties implements BeanFactoryPostProcessor, EnvironmentAware, Ordered {

	private static final Log logger = LogFactory.getLog(UnknownGpuProperties.class);

	static final String POLICY_PROPERTY = "gpu.unknown-properties";

	private static final ConfigurationPropertyName ROOT = ConfigurationPropertyName.of("gpu");

	private @Nullable Environment environment;

	@Override
	public void setEnvironment(Environment environment) {
		this.environment = environment;
	}

	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE;
	}

	@Override
	public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) throws BeansException {
		if (!(this.environment instanceof ConfigurableEnvironment configurable)) {
			return;
		}
		UnknownPropertiesPolicy policy = Binder.get(configurable)
			.bind(POLICY_PROPERTY, UnknownPropertiesPolicy.class)
			.orElse(UnknownPropertiesPolicy.FAIL);
		if (policy == UnknownPropertiesPolicy.IGNORE) {
			return;
		}
		List<UnknownProperty> unknown = find(configurable, propertiesBeans(beanFactory), beanFactory.getBeanClassLoader());
		if (unknown.isEmpty()) {
			return;
		}
		if (policy == UnknownPropertiesPolicy.FAIL) {
			throw new UnknownGpuPropertiesException(unknown);
		}
		StringBuilder message = new StringBuilder("Ignoring ").append(unknown.size())
			.append((unknown.size() == 1) ? " gpu.* key" : " gpu.* keys")
			.append(" that no gpu-compute property binds (gpu.unknown-properties=warn):");
		unknown.forEach((property) -> message.append("\n    ").append(property));
		logger.warn(message);
	}

	/**
	 * The keys under {@code gpu.} in {@code environment} that none of {@code types} binds (each with
	 * its prefix; {@link GpuProperties} at {@code gpu} is always among them) and no configuration
	 * metadata declares, sorted by name.
	 */
	static List<UnknownProperty> find(ConfigurableEnvironment environment, Map<Class<?>, String> types,
			@Nullable ClassLoader classLoader) {
		Map<Class<?>, String> roots = new LinkedHashMap<>();
		roots.put(GpuProperties.class, ROOT.toString());
		roots.putAll(types);
		Binder binder = Binder.get(environment);
		Map<ConfigurationPropertyName, List<Recorder>> recorders = new LinkedHashMap<>();
		Set<ConfigurationPropertyName> known = new HashSet<>();
		roots.forEach((type, prefix) -> {
			ConfigurationPropertyName root = ConfigurationPropertyName.of(prefix);
			Recorder recorder = new Recorder();
			try {
				binder.bind(root, Bindable.of(type), recorder);
			}
			catch (RuntimeException ex) {
				// A type the binder cannot create: what it consumed before that still counts.
				logger.debug("Could not bind " + type.getName() + " to look for unknown gpu.* keys", ex);
			}
			recorders.computeIfAbsent(root, (name) -> new ArrayList<>()).add(recorder);
			known.addAll(recorder.attempted);
		});
		Metadata metadata = Metadata.load(classLoader);
		Map<ConfigurationPropertyName, ConfigurationProperty> candidates = new TreeMap<>();
		UnboundElementsSourceFilter filter = new UnboundElementsSourceFilter();
		for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
			if (!(source instanceof IterableConfigurationPropertySource iterable) || !filter.apply(source)) {
				continue;
			}
			for (ConfigurationPropertyName name : iterable.filter(ROOT::isAncestorOf)) {
				if (!candidates.containsKey(name)) {
					ConfigurationProperty property = source.getConfigurationProperty(name);
					if (property != null) {
						candidates.put(name, property);
					}
				}
			}
		}
		List<UnknownProperty> unknown = new ArrayList<>();
		candidates.forEach((name, property) -> {
			if (!isBound(name, recorders) && !metadata.declares(name, known)) {
				unknown.add(new UnknownProperty(name.toString(), property.getValue(), property.getOrigin(),
						Suggestions.nearest(name.toString(), suggestions(known, metadata))));
			}
		});
		return unknown;
	}

	/** Whether a binding whose root is {@code name} or above it consumed {@code name}. */
	private static boolean isBound(ConfigurationPropertyName name, Map<ConfigurationPropertyName, List<Recorder>> recorders) {
		for (Map.Entry<ConfigurationPropertyName, List<Recorder>> entry : recorders.entrySet()) {
			if (entry.getKey().isAncestorOf(name)) {
				for (Recorder recorder : entry.getValue()) {
					if (recorder.consumed(name)) {
						return true;
					}
				}
			}
		}
		return false;
	}

	private static List<String> suggestions(Set<ConfigurationPropertyName> attempted, Metadata metadata) {
		Set<String> names = new HashSet<>(metadata.names);
		for (ConfigurationPropertyName name : attempted) {
			if (ROOT.isAncestorOf(name)) {
				names.add(name.toString());
			}
		}
		names.remove(POLICY_PROPERTY);
		return names.stream().sorted().toList();
	}

	/** The {@code @ConfigurationProperties} beans other than {@link GpuProperties} bound at or below {@code gpu}. */
	private static Map<Class<?>, String> propertiesBeans(ConfigurableListableBeanFactory beanFactory) {
		Map<Class<?>, String> types = new LinkedHashMap<>();
		for (String name : beanFactory.getBeanNamesForAnnotation(ConfigurationProperties.class)) {
			ConfigurationProperties annotation = beanFactory.findAnnotationOnBean(name, ConfigurationProperties.class,
					false);
			Class<?> type = beanFactory.getType(name, false);
			if (annotation == null || type == null || type == GpuProperties.class) {
				continue;
			}
			String prefix = !annotation.prefix().isEmpty() ? annotation.prefix() : annotation.value();
			if (ConfigurationPropertyName.isValid(prefix)) {
				ConfigurationPropertyName root = ConfigurationPropertyName.of(prefix);
				if (root.equals(ROOT) || ROOT.isAncestorOf(root)) {
					types.put(ClassUtils.getUserClass(type), prefix);
				}
			}
		}
		return types;
	}

	/**
	 * Records what one binding tried and consumed. Failures count as consumed: a key whose value
	 * cannot be converted is known (the binding that follows reports the value), and the binding
	 * goes on so that the keys after it are recorded too.
	 */
	static final class Recorder extends AbstractBindHandler {

		private final Set<ConfigurationPropertyName> attempted = new HashSet<>();

		private final Set<ConfigurationPropertyName> bound = new HashSet<>();

		@Override
		public <T> @Nullable Bindable<T> onStart(ConfigurationPropertyName name, Bindable<T> target,
				BindContext context) {
			this.attempted.add(name);
			return super.onStart(name, target, context);
		}

		@Override
		public @Nullable Object onSuccess(ConfigurationPropertyName name, Bindable<?> target, BindContext context,
				Object result) {
			this.bound.add(name);
			return super.onSuccess(name, target, context, result);
		}

		@Override
		public @Nullable Object onFailure(ConfigurationPropertyName name, Bindable<?> target, BindContext context,
				Exception error) {
			this.bound.add(name);
			return null;
		}

		/**
		 * Whether this binding consumed {@code name}: bound it, or bound the collection it is an
		 * element of from a source that overrides it (Spring Boot's rule for unbound elements).
		 */
		boolean consumed(ConfigurationPropertyName name) {
			if (this.bound.contains(name)) {
				return true;
			}
			if (name.isLastElementIndexed()) {
				return this.bound.contains(name.chop(name.getNumberOfElements() - 1));
			}
			for (int i = 0; i < name.getNumberOfElements(); i++) {
				if (name.isNumericIndex(i)) {
					// list[1].key where list[0].key was bound: the element type has the key
					ConfigurationPropertyName zeroth = ConfigurationPropertyName
						.of(name.chop(i) + "[0]." + name.getElement(i + 1, ConfigurationPropertyName.Form.UNIFORM));
					return this.bound.contains(name.chop(i).append("[0]")) && this.attempted.contains(zeroth);
				}
			}
			return false;
		}

	}

	/** The {@code gpu.*} properties declared by the configuration metadata on the class path. */
	static final class Metadata {

		/** Read once per class loader: Spring Boot's own metadata files are large, and every context start asks. */
		private static final Map<ClassLoader, Metadata> CACHE = new ConcurrentReferenceHashMap<>();

		private final Set<String> names = new HashSet<>();

		/** Map-typed properties: any key below them is theirs. */
		private final List<ConfigurationPropertyName> maps = new ArrayList<>();

		static Metadata load(@Nullable ClassLoader classLoader) {
			ClassLoader key = (classLoader != null) ? classLoader : ClassUtils.getDefaultClassLoader();
			return CACHE.computeIfAbsent(key, Metadata::read);
		}

		private static Metadata read(ClassLoader classLoader) {
			Metadata metadata = new Metadata();
			try {
				Resource[] resources = new PathMatchingResourcePatternResolver(classLoader)
					.getResources("classpath*:META-INF/spring-configuration-metadata.json");
				for (Resource resource : resources) {
					metadata.add(resource);
				}
			}
			catch (IOException | RuntimeException ex) {
				logger.debug("Could not read the configuration metadata; only bound keys count as known", ex);
			}
			return metadata;
		}

		@SuppressWarnings("unchecked")
		private void add(Resource resource) throws IOException {
			String json;
			try (InputStream in = resource.getInputStream()) {
				json = StreamUtils.copyToString(in, StandardCharsets.UTF_8);
			}
			if (!json.contains("\"gpu.")) {
				return;
			}
			Object properties = JsonParserFactory.getJsonParser().parseMap(json).get("properties");
			if (!(properties instanceof List<?> list)) {
				return;
			}
			for (Object entry : list) {
				if (entry instanceof Map<?, ?> property && property.get("name") instanceof String name
						&& ConfigurationPropertyName.isValid(name)) {
					ConfigurationPropertyName parsed = ConfigurationPropertyName.of(name);
					if (!ROOT.isAncestorOf(parsed)) {
						continue;
					}
					this.names.add(parsed.toString());
					if (property.get("type") instanceof String type && type.startsWith("java.util.Map<")) {
						this.maps.add(parsed);
					}
				}
			}
		}

		/**
		 * Whether the metadata declares {@code name}, or a map it belongs to that no binding in
		 * {@code attempted} covers (where a binding does, it knows the entries' keys better).
		 */
		boolean declares(ConfigurationPropertyName name, Set<ConfigurationPropertyName> attempted) {
			if (this.names.contains(name.toString())) {
				return true;
			}
			for (ConfigurationPropertyName map : this.maps) {
				if (map.isAncestorOf(name) && !attempted.contains(map)) {
					return true;
				}
			}
			return false;
		}

	}

}
