package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.gpucompute.contract.VirtualThreads;
import jcuda.driver.CUresult;

/**
 * The per-thread record of which context is current, with counting fakes in place of
 * {@code cuCtxSetCurrent} and {@code cuDevicePrimaryCtxRelease}; runs without a driver. (Retaining a
 * real primary context is covered by the GPU tests: not run here.)
 */
class CudaPrimaryContextTests {

	private final AtomicInteger sets = new AtomicInteger();

	private final AtomicInteger releases = new AtomicInteger();

	private CudaPrimaryContext context(int setResult) {
		return new CudaPrimaryContext(null, null, () -> {
			this.sets.incrementAndGet();
			return setResult;
		}, () -> {
			this.releases.incrementAndGet();
			return CudaErrors.SUCCESS;
		});
	}

	@Test
	void aThreadSetsTheContextOnceThenTheRecordAnswers() {
		CudaPrimaryContext primary = context(CudaErrors.SUCCESS);
		assertThat(primary.makeCurrent()).isEqualTo(CudaErrors.SUCCESS);
		assertThat(primary.makeCurrent()).isEqualTo(CudaErrors.SUCCESS);
		assertThat(primary.makeCurrent()).isEqualTo(CudaErrors.SUCCESS);
		assertThat(this.sets).as("one driver call for three entries on one thread").hasValue(1);
	}

	@Test
	void anotherThreadAndAnotherContextEachSetItAgain() throws Exception {
		CudaPrimaryContext first = context(CudaErrors.SUCCESS);
		CudaPrimaryContext second = context(CudaErrors.SUCCESS);
		first.makeCurrent();
		second.makeCurrent();
		first.makeCurrent();
		assertThat(this.sets).as("switching between two holders on one thread").hasValue(3);
		Thread other = new Thread(first::makeCurrent);
		other.start();
		other.join();
		assertThat(this.sets).as("a thread that never had it").hasValue(4);
		first.makeCurrent();
		assertThat(this.sets).as("this thread's record still names the first").hasValue(4);
	}

	@Test
	void aFailedSetIsReportedAndNotRecorded() {
		CudaPrimaryContext failing = context(CUresult.CUDA_ERROR_INVALID_CONTEXT);
		assertThat(failing.makeCurrent()).isEqualTo(CUresult.CUDA_ERROR_INVALID_CONTEXT);
		assertThat(failing.makeCurrent()).isEqualTo(CUresult.CUDA_ERROR_INVALID_CONTEXT);
		assertThat(this.sets).as("tried again, since nothing was recorded").hasValue(2);
		assertThat(failing.setCurrent()).isEqualTo(CUresult.CUDA_ERROR_INVALID_CONTEXT);
		assertThat(failing.makeCurrent()).isEqualTo(CUresult.CUDA_ERROR_INVALID_CONTEXT);
		assertThat(this.sets).hasValue(4);
	}

	@Test
	void setCurrentAlwaysCallsTheDriverAndRecordsSuccess() {
		CudaPrimaryContext primary = context(CudaErrors.SUCCESS);
		primary.makeCurrent();
		assertThat(primary.setCurrent()).isEqualTo(CudaErrors.SUCCESS);
		assertThat(this.sets).hasValue(2);
		primary.makeCurrent();
		assertThat(this.sets).hasValue(2);
	}

	@Test
	void releaseMakesTheNextEntryOnThisThreadSetAContext() {
		CudaPrimaryContext primary = context(CudaErrors.SUCCESS);
		primary.makeCurrent();
		assertThat(primary.release()).isEqualTo(CudaErrors.SUCCESS);
		assertThat(this.releases).hasValue(1);
		primary.makeCurrent();
		assertThat(this.sets).hasValue(2);
	}

	@Test
	void aVirtualThreadSetsTheContextOnEveryEntry() throws Exception {
		CudaPrimaryContext primary = context(CudaErrors.SUCCESS);
		boolean[] virtual = new boolean[1];
		Thread thread = VirtualThreads.start(() -> {
			virtual[0] = primary.onVirtualThread();
			primary.makeCurrent();
			primary.makeCurrent();
		});
		thread.join();
		assertThat(virtual[0]).isTrue();
		assertThat(this.sets).as("a virtual thread may have changed carrier between two entries").hasValue(2);
	}

	@Test
	void workHandedToAPlatformThreadRunsThereAndItsFailureReachesTheCaller() throws Exception {
		CudaPrimaryContext primary = context(CudaErrors.SUCCESS);
		boolean[] seen = new boolean[4];
		Throwable[] thrown = new Throwable[1];
		Thread caller = VirtualThreads.start(() -> {
			Thread.currentThread().interrupt();
			CudaPrimaryContext.onPlatformThread("closer", () -> {
				seen[0] = primary.onVirtualThread();
				// Set once there: the record holds on a platform thread, whatever waits follow.
				primary.makeCurrent();
				primary.makeCurrent();
			});
			seen[1] = Thread.currentThread().isInterrupted();
			try {
				CudaPrimaryContext.onPlatformThread("closer", () -> {
					throw new IllegalStateException("close failed");
				});
			}
			catch (IllegalStateException ex) {
				thrown[0] = ex;
			}
		});
		caller.join();
		assertThat(seen[0]).as("the work ran on a virtual thread").isFalse();
		assertThat(this.sets).as("driver calls on the platform thread").hasValue(1);
		assertThat(seen[1]).as("the caller's interrupt is kept").isTrue();
		assertThat(thrown[0]).hasMessage("close failed");
	}

	@Test
	void aPlatformThreadIsNotVirtual() {
		assertThat(context(CudaErrors.SUCCESS).onVirtualThread()).isFalse();
	}

}
