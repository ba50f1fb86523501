package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuEventRecord;

import dev.gpucompute.GpuException;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/**
 * The driver side of one backend's {@link CudaCompletions} and of its drain's {@link DrainMarkers}:
 * creating, recording, querying and destroying the events they poll, and turning their failures into
 * the backend's exceptions (which keeps its health up to date).
 *
 * <p>Owns nothing: each call goes to the driver or to the backend given at construction. Called on
 * the completion thread and on the threads that ask for completions; thread-safe as the driver
 * calls and the backend are.
 */
final class CudaCompletionOps implements CudaCompletions.Ops<CudaStream, CUevent> {

	private final CudaDeviceBackend backend;

	CudaCompletionOps(CudaDeviceBackend backend) {
		this.backend = backend;
	}

	@Override
	public CUevent createEvent() {
		CUevent event = new CUevent();
		int result = cuEventCreate(event, CUevent_flags.CU_EVENT_DISABLE_TIMING);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuEventCreate", null, null);
		}
		return event;
	}

	@Override
	public int record(CUevent event, CudaStream stream) {
		return cuEventRecord(event, stream.handle);
	}

	@Override
	public int query(CUevent event) {
		return cuEventQuery(event);
	}

	@Override
	public void destroy(CUevent event) {
		cuEventDestroy(event);
	}

	@Override
	public GpuException recordFailure(int code, CudaStream stream) {
		return this.backend.streamFailure(code, "cuEventRecord", stream);
	}

	@Override
	public GpuException asyncFailure(int code, CudaStream stream) {
		return this.backend.asyncFailure(code, stream);
	}

	@Override
	public String name(CudaStream stream) {
		return stream.name();
	}

	@Override
	public void enterThread() {
		this.backend.enter();
	}

}
