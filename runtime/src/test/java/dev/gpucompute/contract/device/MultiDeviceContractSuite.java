package dev.gpucompute.contract.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.RuntimeThreads;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.settings.KernelTiming;

/**
 * Several devices in one application (docs/runtime.md, "Several devices"): one context per device, placement by
 * load and by key, events and copies across devices. The CPU backend stands in for three devices;
 * on CUDA the suite opens every GPU of the machine, and the tests that need two skip on a machine
 * with one (the GPU machines here have one).
 */
public abstract class MultiDeviceContractSuite {

	private static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	protected GpuDevices devices;

	/** A builder for the backend under test, set up for as many devices as the test wants. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.devices = GpuDevices.openAll(builder().poolSize(1).maxSize(4).kernelTiming(KernelTiming.OFF)
			.acquireTimeout(Duration.ofSeconds(10)));
	}

	@AfterEach
	void close() {
		this.devices.close();
	}

	private void assumeDevices(int n) {
		assumeTrue(this.devices.size() >= n, "needs " + n + " devices; this machine has " + this.devices.size());
	}

	@Test
	void everyDeviceHasItsOwnContextPoolAndKernels() {
		assertThat(this.devices.size()).isPositive();
		assertThat(this.devices.primary()).isSameAs(this.devices.contexts().get(0));
		List<Integer> ordinals = new ArrayList<>();
		for (GpuContext context : this.devices.contexts()) {
			ordinals.add(context.device().ordinal());
			assertThat(this.devices.get(context.device().ordinal())).isSameAs(context);
			assertThat(context.streams().stats().size()).isEqualTo(1);
			GpuLauncher launcher = context.launcher();
			Kernel saxpy = launcher.load(ContractKernels.SAXPY);
			float[] y = { 1, 2, 3 };
			try (StreamLease lease = context.streams().acquire();
					DeviceBuffer dx = launcher.callWithStream(lease.stream(), () -> launcher.upload(HostArray.of(new float[] { 1, 1, 1 })));
					DeviceBuffer dy = launcher.callWithStream(lease.stream(), () -> launcher.upload(HostArray.of(y)))) {
				launcher.launch(lease.stream(), saxpy, LaunchConfig.linear(3, 32), 3, 2f, dx, dy);
				dy.download(HostArray.of(y), lease.stream()).join();
			}
			assertThat(y).containsExactly(3, 4, 5);
			assertThat(saxpy.stats().launches()).isEqualTo(1);
		}
		assertThat(ordinals).isSorted().doesNotHaveDuplicates();
		assertThat(this.devices.ordinals()).containsExactlyElementsOf(ordinals);
		assertThatThrownBy(() -> this.devices.get(99)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("Device 99 is not open here");
	}

	@Test
	void aKeyStaysOnItsDeviceAndLosingADeviceMovesOnlyItsKeys() {
		assumeDevices(2);
		Map<String, Integer> before = new HashMap<>();
		Map<Integer, Integer> perDevice = new HashMap<>();
		for (int i = 0; i < 6000; i++) {
			String key = "collection-" + i;
			int ordinal = this.devices.forKey(key).device().ordinal();
			assertThat(this.devices.forKey(key).device().ordinal()).as("stable").isEqualTo(ordinal);
			before.put(key, ordinal);
			perDevice.merge(ordinal, 1, Integer::sum);
		}
		for (GpuContext context : this.devices.contexts()) {
			assertThat(perDevice.getOrDefault(context.device().ordinal(), 0)).as("keys on device %d",
					context.device().ordinal())
				.isGreaterThan(6000 / this.devices.size() / 2);
		}
		GpuContext lost = this.devices.contexts().get(this.devices.size() - 1);
		int lostOrdinal = lost.device().ordinal();
		lost.close(); // a device that is gone is unhealthy
		int moved = 0;
		for (Map.Entry<String, Integer> entry : before.entrySet()) {
			int now = this.devices.forKey(entry.getKey()).device().ordinal();
			assertThat(now).isNotEqualTo(lostOrdinal);
			if (entry.getValue() != lostOrdinal) {
				assertThat(now).as("key %s was not on the lost device", entry.getKey()).isEqualTo(entry.getValue());
			}
			else {
				moved++;
			}
		}
		assertThat(moved).isEqualTo(perDevice.get(lostOrdinal));
	}

	@Test
	void leastLoadedPicksTheDeviceWithTheLeastWorkAndSkipsAnUnhealthyOne() {
		assumeDevices(2);
		List<StreamLease> held = new ArrayList<>();
		try {
			// Every device but the last gets a lease.
			for (int i = 0; i < this.devices.size() - 1; i++) {
				held.add(this.devices.contexts().get(i).streams().acquire());
			}
			GpuContext last = this.devices.contexts().get(this.devices.size() - 1);
			for (int i = 0; i < 5; i++) {
				assertThat(this.devices.leastLoaded()).isSameAs(last);
			}
			held.add(last.streams().acquire());
			held.add(last.streams().acquire());
			assertThat(this.devices.leastLoaded()).isNotSameAs(last);
		}
		finally {
			held.forEach(StreamLease::close);
		}
		GpuContext first = this.devices.primary();
		first.close();
		for (int i = 0; i < 10; i++) {
			assertThat(this.devices.leastLoaded()).isNotSameAs(first);
		}
	}

	@Test
	void aStreamWaitsForAnEventOfAnotherDeviceAndCopiesItsData() {
		assertCrossDeviceOrdering((writer, reader, a) -> {
			try (GpuEvent written = a.events().create()) {
				writer.record(written);
				reader.waitFor(written);
			}
		});
	}

	@Test
	void aStreamWaitsForAStreamOfAnotherDevice() {
		assertCrossDeviceOrdering((writer, reader, a) -> reader.waitFor(writer));
	}

	@Test
	void aStreamOfAnotherDeviceCannotJoinACapture() {
		assumeDevices(2);
		GpuContext a = this.devices.contexts().get(0);
		GpuContext b = this.devices.contexts().get(1);
		try (StreamLease capturing = a.streams().acquire(); StreamLease other = b.streams().acquire();
				GraphCapture capture = GpuGraphs.of(a).beginCapture("one-device", capturing.stream())) {
			assertThatThrownBy(() -> other.stream().waitFor(capturing.stream()))
				.isInstanceOfSatisfying(GraphCaptureException.class, (ex) -> {
					assertThat(ex.kind()).isEqualTo(GraphCaptureException.Kind.FOREIGN_STREAM);
					assertThat(ex.getMessage()).contains("a stream of another device").contains("one-device");
				});
			assertThat(capture.isCapturing()).as("the capturing thread's refusal discards its capture").isFalse();
			assertThat(other.stream().isIdle()).as("b's stream did not join: a host query is allowed").isTrue();
			other.stream().waitFor(capturing.stream()); // outside the capture: an ordinary order
			other.stream().synchronize();
		}
	}

	/** How a test orders {@code reader} (device b) after {@code writer}'s work (device a). */
	@FunctionalInterface
	private interface Ordering {

		void order(GpuStream writer, GpuStream reader, GpuContext a);

	}

	/**
	 * A slow kernel on device a writes a cell; device b copies the cell after {@code ordering} alone
	 * (the buffer's own first-use ordering is used up beforehand), so a missing wait reads 0.
	 */
	private void assertCrossDeviceOrdering(Ordering ordering) {
		assumeDevices(2);
		GpuContext a = this.devices.contexts().get(0);
		GpuContext b = this.devices.contexts().get(1);
		Kernel slow = a.launcher().load(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease owner = a.streams().acquire(); StreamLease writer = a.streams().acquire();
				StreamLease reader = b.streams().acquire();
				DeviceBuffer cell = a.launcher().callWithStream(owner.stream(), () -> a.launcher().allocate(4, ElementType.BYTE));
				DeviceBuffer copy = b.launcher().callWithStream(reader.stream(), () -> b.launcher().allocate(4, ElementType.BYTE))) {
			cell.fill((byte) 0, owner.stream());
			copy.copyFrom(cell, 0, 0, 4, reader.stream()); // the first use on b: ordered after the fill
			a.launcher().launch(writer.stream(), slow, ONE, cell, 0, 42, 300);
			ordering.order(writer.stream(), reader.stream(), a);
			copy.copyFrom(cell, 0, 0, 4, reader.stream());
			int[] host = new int[1];
			copy.download(HostArray.of(host), reader.stream()).join();
			assertThat(host).as("b's copy ran after a's kernel").containsExactly(42);
		}
	}

	@Test
	void aPeerCopyMovesEveryByteAndTheSourceIsFreedOnlyAfterIt() {
		assumeDevices(2);
		GpuContext a = this.devices.contexts().get(0);
		GpuContext b = this.devices.contexts().get(this.devices.size() - 1);
		long memoryA = a.memory().usedBytes();
		int n = 1 << 20;
		float[] data = new float[n];
		SplittableRandom random = new SplittableRandom(7);
		for (int i = 0; i < n; i++) {
			data[i] = (float) random.nextDouble();
		}
		float[] back = new float[n];
		try (StreamLease onB = b.streams().acquire();
				DeviceBuffer target = b.launcher().callWithStream(onB.stream(), () -> b.launcher().allocate(4L * n, ElementType.BYTE))) {
			DeviceBuffer source = a.launcher().upload(HostArray.of(data));
			// Closed at once: its free must wait for the copy on b, ordered across the devices.
			target.copyFrom(source, 0, 0, 4L * n, onB.stream());
			source.close();
			target.download(HostArray.of(back), onB.stream()).join();
		}
		assertThat(java.util.Arrays.mismatch(back, data)).as("first element that differs").isEqualTo(-1);
		a.synchronizeDevice();
		assertThat(a.memory().usedBytes()).isEqualTo(memoryA);
	}

	@Test
	void handlesOfAContextOutsideTheGroupAreStillRejected() {
		GpuContext inGroup = this.devices.primary();
		try (GpuContext outside = builder().kernelTiming(KernelTiming.OFF).open();
				StreamLease lease = inGroup.streams().acquire(); GpuEvent foreign = outside.events().create();
				DeviceBuffer theirs = outside.launcher().allocate(16, ElementType.BYTE);
				DeviceBuffer mine = inGroup.launcher().callWithStream(lease.stream(), () -> inGroup.launcher().allocate(16, ElementType.BYTE))) {
			GpuStream stream = lease.stream();
			assertThatThrownBy(() -> stream.waitFor(foreign)).isInstanceOf(ContextMismatchException.class);
			assertThatThrownBy(() -> mine.copyFrom(theirs, 0, 0, 16, stream)).isInstanceOf(ContextMismatchException.class);
		}
	}

	@Test
	void badDeviceListsAreRejectedAndNothingIsLeftOpen() throws Exception {
		java.util.Set<Thread> before = RuntimeThreads.snapshot();
		assertThatThrownBy(() -> GpuDevices.open(builder(), List.of())).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("At least one device");
		assertThatThrownBy(() -> GpuDevices.open(builder(), List.of(0, 0))).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("listed twice");
		assertThatThrownBy(() -> GpuDevices.open(builder(), List.of(0, -1))).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("must not be negative");
		assertThatThrownBy(() -> GpuDevices.open(builder(), List.of(0, 999)))
			.isInstanceOf(dev.gpucompute.BackendUnavailableException.class)
			.hasMessageContaining("999");
		assertThat(RuntimeThreads.leftSince(before, 5, ownThreadPrefixes())).as("threads of the devices opened before the failure")
			.isEmpty();
	}

	/** "gpu-N-" and the CPU workers of the suite's own devices, which stay open. */
	private String[] ownThreadPrefixes() {
		List<String> prefixes = new ArrayList<>();
		for (GpuContext context : this.devices.contexts()) {
			String text = context.toString(); // GpuContext#N[...]
			prefixes.add("gpu-" + text.substring(text.indexOf('#') + 1, text.indexOf('[')) + "-");
		}
		return prefixes.toArray(new String[0]);
	}

}
