package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import dev.gpucompute.cpu.CpuBackendProvider;
import dev.gpucompute.internal.context.ContextAssembly;
import dev.gpucompute.internal.core.CompletionFuture;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.memory.CopyFaults;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendListener;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeStream;

/**
 * A thread waiting for a copy's future runs its completion itself when that is offered while it
 * spins, instead of waiting for the hand-off to a completion thread; the completion runs once
 * whichever thread gets there first, and nothing else about the copy changes.
 */
class CompletionFutureTests {

	@Test
	void aSpinningWaiterRunsTheOfferedCompletionOnItsOwnThread() throws Exception {
		// A spin far longer than the test needs: the waiter is still spinning when the offer comes.
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.SECONDS.toNanos(30));
		AtomicReference<Thread> ranOn = new AtomicReference<>();
		Thread offerer = new Thread(() -> {
			sleepQuietly(20);
			future.offer(() -> {
				ranOn.set(Thread.currentThread());
				future.complete("done");
			});
		});
		offerer.start();
		assertThat(future.join()).isEqualTo("done");
		assertThat(ranOn.get()).isSameAs(Thread.currentThread());
		offerer.join();
	}

	@Test
	void withoutASpinTheWaiterRunsOnlyACompletionAlreadyOfferedAndOtherwiseWaits() throws Exception {
		CompletionFuture<String> offeredFirst = new CompletionFuture<>(0);
		offeredFirst.offer(() -> offeredFirst.complete("ran here"));
		assertThat(offeredFirst.get()).isEqualTo("ran here");

		CompletionFuture<String> later = new CompletionFuture<>(0);
		Thread completer = new Thread(() -> {
			sleepQuietly(20);
			later.complete("completed elsewhere");
		});
		completer.start();
		assertThat(later.get(10, TimeUnit.SECONDS)).isEqualTo("completed elsewhere");
		completer.join();
	}

	@Test
	void aWaiterThatStopsSpinningStillGetsTheResultFromTheCompletionThread() throws Exception {
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.MICROSECONDS.toNanos(10));
		Thread completer = new Thread(() -> {
			sleepQuietly(50);
			future.complete("late");
		});
		completer.start();
		assertThat(future.join()).isEqualTo("late");
		completer.join();
	}

	@Test
	void aCompletionThatThrowsFailsItsFutureInsteadOfEscapingTheWaiter() {
		CompletionFuture<String> future = new CompletionFuture<>(0);
		IllegalStateException broken = new IllegalStateException("broken completion");
		future.offer(() -> {
			throw broken;
		});
		assertThatThrownBy(future::join)
			.isInstanceOf(CompletionException.class)
			.hasCause(broken);
	}

	/** The same on a completion thread, where a completion nobody waits for runs: its future fails, it does not hang. */
	@Test
	void aCompletionThatThrowsOnACompletionThreadFailsItsFutureToo() throws Exception {
		// The completions of a context, built here over a CPU backend as a context builds them.
		DeviceBackend backend = new CpuBackendProvider()
			.open(new BackendConfig(0, 1, 1 << 20, 0, List.of(), null, BackendListener.NONE));
		ContextCompletions completions = new ContextCompletions(1, "completion-test-", 0, new CompletionFuture.Waits() {

			@Override
			public void started() {
			}

			@Override
			public void ended() {
			}

		});
		try {
			NativeStream stream = backend.createStream(StreamPriority.NORMAL, "completion-test");
			IllegalStateException broken = new IllegalStateException("broken completion");
			CompletableFuture<Void> future = completions.whenDone(stream,
					(CompletableFuture<Void> done, GpuException failure) -> {
						throw broken;
					});
			// Waited for through a plain dependent, whose get does not run the completion itself.
			Throwable outcome = future.handle((result, failure) -> failure).get(10, TimeUnit.SECONDS);
			assertThat(outcome).isSameAs(broken);
		}
		finally {
			completions.shutdown();
			backend.close();
		}
	}

	@Test
	void anInterruptedWaiterThrowsInsteadOfRunningTheCompletion() {
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.SECONDS.toNanos(1));
		AtomicReference<Thread> ranOn = new AtomicReference<>();
		future.offer(() -> {
			ranOn.set(Thread.currentThread());
			future.complete("done");
		});
		Thread.currentThread().interrupt();
		try {
			assertThatThrownBy(future::get).isInstanceOf(InterruptedException.class);
		}
		finally {
			Thread.interrupted();
		}
		assertThat(ranOn.get()).isNull();
		assertThat(future).isNotDone();
	}

	@Test
	void aTimedGetSpinsWithinItsTimeoutNotBeforeIt() throws Exception {
		// A spin of an hour and a timeout of 200 ms: the spin is cut to the timeout and counts against it. Seen
		// from the waiting thread's state, not a stopwatch: it spins (RUNNABLE) and then gives up without ever
		// parking in the future's timed wait (TIMED_WAITING), which it would do for what is left of the timeout
		// had the spin ended before the deadline, or for the whole timeout again had the spin not counted
		// against it. And a completion offered once the deadline is long past is not taken: a spin that
		// outlasted the timeout would run it and return its value.
		CountDownLatch waitStarted = new CountDownLatch(1);
		AtomicInteger waitsEnded = new AtomicInteger();
		CompletionFuture.Waits waits = new CompletionFuture.Waits() {

			@Override
			public void started() {
				waitStarted.countDown();
			}

			@Override
			public void ended() {
				waitsEnded.incrementAndGet();
			}

		};
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.HOURS.toNanos(1), waits);
		AtomicReference<Object> outcome = new AtomicReference<>();
		Thread waiter = new Thread(() -> {
			try {
				outcome.set(future.get(200, TimeUnit.MILLISECONDS));
			}
			catch (Throwable ex) {
				outcome.set(ex);
			}
		}, "timed-get");
		waiter.start();
		assertThat(waitStarted.await(30, TimeUnit.SECONDS)).as("the waiter announced its wait").isTrue();
		// The offer waits far beyond the deadline (whatever the scheduler does to the waiter meanwhile), and
		// only matters when the waiter still spins then.
		long offerAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		boolean offered = false;
		Set<Thread.State> states = java.util.EnumSet.noneOf(Thread.State.class);
		while (waiter.isAlive()) {
			states.add(waiter.getState());
			if (!offered && System.nanoTime() - offerAt > 0) {
				future.offer(() -> future.complete("taken after the deadline"));
				offered = true;
			}
			Thread.onSpinWait();
		}
		waiter.join();
		assertThat(outcome.get()).as("the get's outcome").isInstanceOf(TimeoutException.class);
		assertThat(states).as("the waiter's states while it waited").contains(Thread.State.RUNNABLE)
			.doesNotContain(Thread.State.TIMED_WAITING);
		assertThat(waitsEnded.get()).as("the wait announced, then ended once").isEqualTo(1);
		assertThat(future).isNotDone();
	}

	@Test
	void aWaiterThatRunsTheCompletionItselfNoLongerCountsAsWaiting() throws Exception {
		// The offered task runs dependent stages (user code, any length) on the waiting thread; the
		// stream's work is done by then, so the backend must not keep polling for that thread.
		AtomicInteger waiting = new AtomicInteger();
		CountDownLatch started = new CountDownLatch(1);
		CompletionFuture.Waits waits = new CompletionFuture.Waits() {

			@Override
			public void started() {
				waiting.incrementAndGet();
				started.countDown();
			}

			@Override
			public void ended() {
				waiting.decrementAndGet();
			}

		};
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.SECONDS.toNanos(30), waits);
		AtomicInteger seenInStage = new AtomicInteger(-1);
		AtomicReference<Thread> stageThread = new AtomicReference<>();
		future.thenRun(() -> {
			stageThread.set(Thread.currentThread());
			seenInStage.set(waiting.get());
		});
		Thread offerer = new Thread(() -> {
			try {
				started.await();
			}
			catch (InterruptedException ex) {
				return;
			}
			future.offer(() -> future.complete("done"));
		});
		offerer.start();
		assertThat(future.join()).isEqualTo("done");
		offerer.join();
		assertThat(stageThread.get()).as("the waiter ran the completion").isSameAs(Thread.currentThread());
		assertThat(seenInStage).as("counted as waiting while running a dependent stage").hasValue(0);
		assertThat(waiting).as("after the wait").hasValue(0);
	}

	@Test
	void theBackendKnowsWhileAThreadWaitsAndOnlyThen() throws Exception {
		AtomicInteger waiting = new AtomicInteger();
		AtomicInteger started = new AtomicInteger();
		AtomicInteger seenWhileWaiting = new AtomicInteger(-1);
		CompletionFuture.Waits waits = new CompletionFuture.Waits() {

			@Override
			public void started() {
				started.incrementAndGet();
				waiting.incrementAndGet();
			}

			@Override
			public void ended() {
				waiting.decrementAndGet();
			}

		};
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.MICROSECONDS.toNanos(100), waits);
		Thread completer = new Thread(() -> {
			sleepQuietly(50); // past the waiter's spin: it blocks, still waiting
			seenWhileWaiting.set(waiting.get());
			future.complete("done");
		});
		completer.start();
		assertThat(future.join()).isEqualTo("done");
		completer.join();
		assertThat(seenWhileWaiting).as("waiting while blocked after the spin").hasValue(1);
		assertThat(waiting).as("after the wait").hasValue(0);

		CompletionFuture<String> timed = new CompletionFuture<>(TimeUnit.MICROSECONDS.toNanos(100), waits);
		assertThatThrownBy(() -> timed.get(20, TimeUnit.MILLISECONDS))
			.isInstanceOf(TimeoutException.class);
		assertThat(waiting).as("after a timed-out wait").hasValue(0);

		int before = started.get();
		CompletionFuture<String> noSpin = new CompletionFuture<>(0, waits);
		Thread later = new Thread(() -> {
			sleepQuietly(20);
			noSpin.complete("x");
		});
		later.start();
		assertThat(noSpin.join()).isEqualTo("x");
		later.join();
		CompletionFuture<String> done = new CompletionFuture<>(TimeUnit.SECONDS.toNanos(1), waits);
		done.complete("y");
		assertThat(done.join()).isEqualTo("y");
		CompletionFuture<String> offered = new CompletionFuture<>(TimeUnit.SECONDS.toNanos(1), waits);
		offered.offer(() -> offered.complete("z"));
		assertThat(offered.join()).isEqualTo("z");
		assertThat(started).as("no spin, done, or the completion already here: not told").hasValue(before);
	}

	@Test
	void aCompletedFutureIsNotRunAgainByItsWaiters() {
		CompletionFuture<String> future = new CompletionFuture<>(TimeUnit.SECONDS.toNanos(1));
		AtomicInteger runs = new AtomicInteger();
		future.complete("already");
		future.offer(runs::incrementAndGet);
		assertThat(future.join()).isEqualTo("already");
		assertThat(runs).hasValue(0);
	}

	/**
	 * The waiter's path on the CPU backend (its default is not to spin): 4 threads copy through host
	 * buffers and arrays, each copy joined at once, while the completion threads get every task too.
	 * Every copy round-trips its bytes exactly (a completion run twice would give a staging block back
	 * twice, and two later copies would share it), every future completes, staging is all back, and
	 * waiters did run completions themselves.
	 */
	@Test
	void copiesJoinedByTheirThreadsAreExactOnceAndLeaveNoStaging() throws Exception {
		int threads = 4;
		int rounds = 200;
		int bytes = 4096;
		Set<String> completedOn = ConcurrentHashMap.newKeySet();
		try (GpuContext context = ContextAssembly.open(
				GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(threads).maxSize(threads).settings(), 0,
				new ContextAssembly.Options(null, TimeUnit.MILLISECONDS.toNanos(5), CopyFaults.NONE))) {
			ExecutorService callers = Executors.newFixedThreadPool(threads, (task) -> new Thread(task, "caller"));
			CountDownLatch start = new CountDownLatch(1);
			List<Future<?>> results = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				int seed = t;
				results.add(callers.submit(() -> {
					start.await();
					SplittableRandom random = new SplittableRandom(seed);
					try (StreamLease lease = context.streams().acquire();
							DeviceBuffer device = context.launcher().allocate(bytes, ElementType.BYTE);
							HostBuffer host = context.launcher().allocateHost(bytes)) {
						GpuStream stream = lease.stream();
						for (int round = 0; round < rounds; round++) {
							byte[] data = new byte[bytes];
							random.nextBytes(data);
							host.put(0, HostArray.of(data));
							CompletableFuture<Void> up = device.upload(host, stream);
							// A stage added while the copy is still pending runs on the thread that
							// completes it; one added after would run here whatever the runtime did.
							AtomicReference<Thread> completer = new AtomicReference<>();
							CountDownLatch stageRan = new CountDownLatch(1);
							up.thenRun(() -> {
								completer.set(Thread.currentThread());
								stageRan.countDown();
							});
							boolean addedWhilePending = !up.isDone();
							up.join();
							assertThat(stageRan.await(10, TimeUnit.SECONDS)).isTrue();
							if (addedWhilePending) {
								completedOn.add(completer.get().getName());
							}
							byte[] back = new byte[bytes];
							device.download(HostArray.of(back), stream).join();
							assertThat(back).isEqualTo(data);
							random.nextBytes(data);
							device.upload(HostArray.of(data), stream).join();
							host.put(0, HostArray.of(new byte[bytes]));
							device.download(host, stream).join();
							byte[] inHost = new byte[bytes];
							host.get(0, HostArray.of(inHost));
							assertThat(inHost).isEqualTo(data);
						}
					}
					return null;
				}));
			}
			start.countDown();
			for (Future<?> result : results) {
				result.get(120, TimeUnit.SECONDS);
			}
			callers.shutdown();
			assertThat(callers.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
			assertThat(context.hostMemory().stagingBytes()).as("staging held by copies").isZero();
			assertThat(context.hostMemory().hostBuffers()).isZero();
		}
		assertThat(completedOn).as("threads that completed the uploads").contains("caller");
	}

	/**
	 * Close waits for the completions of the copies it let finish, so that it frees their staging
	 * only after they unpacked from it (on CUDA the backend's close frees every page-locked block
	 * still live). A completion that a waiting thread claimed counts too: the completion thread's copy
	 * of the task then does nothing, so waiting for the completion threads alone does not wait for it.
	 */
	@Test
	void closeWaitsForACompletionThatAWaiterIsRunning() throws Exception {
		int bytes = 4096;
		CopyFaultInjection faults = new CopyFaultInjection();
		GpuContext context = ContextAssembly.open(GpuContext.builder().backend(Backend.CPU).cpuThreads(2).settings(), 0,
				new ContextAssembly.Options(null, TimeUnit.SECONDS.toNanos(30), faults));
		CountDownLatch unpacking = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		AtomicReference<Thread> waiter = new AtomicReference<>();
		AtomicInteger waiterUnpacks = new AtomicInteger();
		AtomicReference<Throwable> waiterFailure = new AtomicReference<>();
		byte[] data = new byte[bytes];
		new SplittableRandom(7).nextBytes(data);
		byte[] back = new byte[bytes];
		try (DeviceBuffer device = context.launcher().allocate(bytes, ElementType.BYTE)) {
			device.upload(HostArray.of(data)).join();
			faults.arm((step, chunk) -> {
				if (step == CopyFaults.Step.UNPACK && Thread.currentThread() == waiter.get()
						&& waiterUnpacks.incrementAndGet() == 1) {
					unpacking.countDown();
					try {
						release.await(30, TimeUnit.SECONDS);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
				}
			});
			Thread downloads = new Thread(() -> {
				try {
					// Until this thread wins the completion over the completion thread (it spins, so nearly always).
					for (int i = 0; i < 1000 && waiterUnpacks.get() == 0; i++) {
						device.download(HostArray.of(back)).join();
					}
				}
				catch (Throwable ex) {
					waiterFailure.set(ex);
				}
			}, "waiter");
			waiter.set(downloads);
			downloads.start();
			assertThat(unpacking.await(30, TimeUnit.SECONDS)).as("the waiter ran a download's completion").isTrue();

			AtomicReference<Boolean> releasedWhenClosed = new AtomicReference<>();
			AtomicBoolean released = new AtomicBoolean();
			Thread closer = new Thread(() -> {
				context.close();
				releasedWhenClosed.set(released.get());
			}, "closer");
			closer.start();
			closer.join(500);
			released.set(true);
			release.countDown();
			closer.join(TimeUnit.SECONDS.toMillis(30));
			downloads.join(TimeUnit.SECONDS.toMillis(30));
			assertThat(waiterFailure.get()).isNull();
			assertThat(back).isEqualTo(data);
			assertThat(releasedWhenClosed.get()).as("close returned only after the waiter's completion ended").isTrue();
		}
		finally {
			release.countDown();
			context.close();
		}
	}

	private static void sleepQuietly(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
