package dev.gpucompute.sample;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Network;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.dockerclient.DockerClientConfigUtils;
import org.testcontainers.dockerclient.DockerClientProviderStrategy;
import org.testcontainers.dockerclient.TransportConfig;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.TestcontainersConfiguration;

/**
 * What a container test needs before Testcontainers starts: a Docker daemon, and every image it
 * will pull (Ryuk, the image that finds the host's address from inside a container, the Dockerfile's
 * base) either present or pullable. Checked quickly and without Testcontainers' own client,
 * whose first use starts Ryuk: on a host that can reach no registry, Ryuk's image cannot be pulled
 * and Testcontainers retries the pull for minutes before giving up.
 */
final class DockerPrerequisites {

	private static final Pattern BASE_IMAGE_ARG = Pattern.compile("(?m)^ARG\\s+BASE_IMAGE=(\\S+)\\s*$");

	private DockerPrerequisites() {
	}

	/**
	 * Why the container test cannot run here, or {@code null} when it can.
	 * @param jar the packaged application
	 * @param baseImage the image the Dockerfile builds on
	 */
	static String unavailable(Path jar, String baseImage) {
		if (!Files.isRegularFile(jar)) {
			return "the packaged application " + jar + " is missing (run mvn verify, which packages it first)";
		}
		DockerClient client;
		URI dockerHost;
		try {
			// Finds the daemon (DOCKER_HOST, the socket, ...) and pings it; starts nothing.
			TransportConfig transport = DockerClientFactory.instance().getTransportConfig();
			dockerHost = transport.getDockerHost();
			client = DockerClientProviderStrategy.getClientForConfig(transport);
		}
		catch (RuntimeException ex) {
			return "no Docker daemon is reachable (" + ex.getMessage() + ")";
		}
		try (client) {
			if (!Boolean.parseBoolean(System.getenv("TESTCONTAINERS_RYUK_DISABLED"))) {
				// Testcontainers pins Ryuk's tag internally: any local image of the repository is taken as
				// a sign that it was pulled before; otherwise one pull tells whether a registry answers.
				String ryuk = TestcontainersConfiguration.getInstance().getRyukImage();
				String repository = DockerImageName.parse(ryuk).getUnversionedPart();
				if (client.listImagesCmd().withReferenceFilter(repository).exec().isEmpty()) {
					String missing = missingImage(client, ryuk);
					if (missing != null) {
						return "Testcontainers' resource reaper (Ryuk) needs the image " + repository + ", which "
								+ missing + "; where no registry is reachable, set TESTCONTAINERS_RYUK_DISABLED=true "
								+ "(as .ci/run does)";
					}
				}
			}
			if (needsGatewayProbe(client, dockerHost)) {
				String tiny = TestcontainersConfiguration.getInstance().getTinyImage();
				String missing = missingImage(client, tiny);
				if (missing != null) {
					return "this test runs inside a container (/.dockerenv), where Testcontainers starts " + tiny
							+ " to find the Docker host's address, and that image " + missing + "; set "
							+ "TESTCONTAINERS_HOST_OVERRIDE to the address where the daemon publishes ports (localhost "
							+ "when it runs here), or give the daemon's bridge network a gateway (dockerd --bip)";
				}
			}
			String missing = missingImage(client, baseImage);
			if (missing != null) {
				return "the base image " + baseImage + " " + missing + "; build one with Java 17 locally (.ci/run shows "
						+ "how, from Debian's packages) and name it in SAMPLE_APP_BASE_IMAGE";
			}
			return null;
		}
		catch (IOException | RuntimeException ex) {
			return "Docker did not answer as expected (" + ex + ")";
		}
	}

	/**
	 * Whether Testcontainers will run a container to find the Docker host's address: from inside a
	 * container, on a local socket, when the bridge network names no gateway and no override is set.
	 */
	private static boolean needsGatewayProbe(DockerClient client, URI dockerHost) {
		if (!DockerClientConfigUtils.IN_A_CONTAINER || !System.getenv().getOrDefault("TESTCONTAINERS_HOST_OVERRIDE", "").isBlank()
				|| !("unix".equals(dockerHost.getScheme()) || "npipe".equals(dockerHost.getScheme()))) {
			return false;
		}
		Network.Ipam ipam = client.inspectNetworkCmd().withNetworkId("bridge").exec().getIpam();
		return ipam == null || ipam.getConfig() == null
				|| ipam.getConfig().stream().noneMatch((config) -> config.getGateway() != null);
	}

	/** The Dockerfile's default base image: its {@code ARG BASE_IMAGE=...} line. */
	static String defaultBaseImage(Path dockerfile) {
		try {
			Matcher matcher = BASE_IMAGE_ARG.matcher(Files.readString(dockerfile));
			if (!matcher.find()) {
				throw new IllegalStateException(dockerfile + " has no 'ARG BASE_IMAGE=<image>' line");
			}
			return matcher.group(1);
		}
		catch (IOException ex) {
			throw new IllegalStateException("Cannot read " + dockerfile, ex);
		}
	}

	/** Why {@code image} cannot be had, or {@code null} when it is present or was pulled now. */
	private static String missingImage(DockerClient client, String image) {
		try {
			client.inspectImageCmd(image).exec();
			return null;
		}
		catch (NotFoundException ex) {
			// not here: try one pull, which fails at once where the registry cannot be resolved or reached
		}
		try {
			if (!client.pullImageCmd(image).start().awaitCompletion(10, TimeUnit.MINUTES)) {
				return "is not present and its pull did not finish within 10 minutes";
			}
			client.inspectImageCmd(image).exec();
			return null;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return "is not present (interrupted while pulling it)";
		}
		catch (RuntimeException ex) {
			return "is not present and cannot be pulled (" + ex.getMessage().strip() + ")";
		}
	}

}
