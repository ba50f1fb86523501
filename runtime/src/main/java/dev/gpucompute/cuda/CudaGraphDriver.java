package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuGraphDestroy;
import static jcuda.driver.JCudaDriver.cuGraphExecDestroy;
import static jcuda.driver.JCudaDriver.cuGraphGetNodes;
import static jcuda.driver.JCudaDriver.cuGraphInstantiate;
import static jcuda.driver.JCudaDriver.cuGraphLaunch;
import static jcuda.driver.JCudaDriver.cuGraphUpload;
import static jcuda.driver.JCudaDriver.cuStreamBeginCapture;
import static jcuda.driver.JCudaDriver.cuStreamEndCapture;
import static jcuda.driver.JCudaDriver.cuStreamIsCapturing;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUgraphNode;
import org.jspecify.annotations.Nullable;

/**
 * The driver side of {@link CudaGraphs}: JCuda 12.6 for capture, instantiation, launch and release;
 * {@code cuGraphExecUpdate_v2} through JNA, since JCuda's {@code cuGraphExecUpdate} throws
 * {@code UnsupportedOperationException} (CUDA 12 replaced the entry point and its result type). A
 * driver without that entry point, or an application without JNA (an optional dependency), is
 * answered {@link CudaGraphs#UPDATE_UNAVAILABLE}: the room then instantiates anew. Only
 * {@link JnaUpdate} refers to JNA, so that this class loads and the backend opens without it.
 * Stateless apart from the entry point found once; thread-safe.
 */
final class CudaGraphDriver implements CudaGraphs.Driver {

	/** {@code cuGraphExecUpdate_v2}, or null when the driver has none or JNA cannot reach it. */
	private final @Nullable JnaUpdate update;

	private final @Nullable String updateMissing;

	CudaGraphDriver() {
		JnaUpdate found = null;
		String missing = null;
		try {
			found = JnaUpdate.find();
		}
		catch (NoClassDefFoundError ex) {
			// A class missing ("com/sun/jna/NativeLibrary"), or JNA whose native part failed to load before.
			String what = String.valueOf(ex.getMessage());
			missing = (what.startsWith("com/sun/jna/") ? "no JNA on the class path" : "JNA cannot load (" + what + ")")
					+ " to call cuGraphExecUpdate_v2";
		}
		catch (LinkageError | RuntimeException ex) {
			// UnsatisfiedLinkError: no libcuda.so.1 JNA can open, or no such entry point in it.
			missing = "the driver has no cuGraphExecUpdate_v2 (" + ex.getMessage() + ")";
		}
		this.update = found;
		this.updateMissing = missing;
	}

	/** Why the update entry point is missing, or {@code null} when it was found. */
	@Nullable String updateMissing() {
		return this.updateMissing;
	}

	@Override
	public String updateUnavailable() {
		return (this.updateMissing != null) ? this.updateMissing : "the driver has no cuGraphExecUpdate_v2";
	}

	@Override
	public int beginCapture(CudaStream stream, int mode) {
		return cuStreamBeginCapture(stream.handle, mode);
	}

	@Override
	public int captureStatus(CudaStream stream, int[] status) {
		return cuStreamIsCapturing(stream.handle, status);
	}

	@Override
	public CudaGraphs.Ended endCapture(CudaStream stream) {
		CudaGraphs.GraphHandle graph = new CudaGraphs.GraphHandle();
		int result = cuStreamEndCapture(stream.handle, graph);
		return new CudaGraphs.Ended(result, (graph.address() != 0) ? graph : null);
	}

	@Override
	public int nodeCount(CudaGraphs.GraphHandle graph, long[] count) {
		return cuGraphGetNodes(graph, (CUgraphNode[]) null, count);
	}

	@Override
	public int instantiate(CudaGraphs.ExecHandle exec, CudaGraphs.GraphHandle graph) {
		return cuGraphInstantiate(exec, graph, 0);
	}

	@Override
	public int upload(CudaGraphs.ExecHandle exec, CudaStream stream) {
		return cuGraphUpload(exec, stream.handle);
	}

	@Override
	public int launch(CudaGraphs.ExecHandle exec, CudaStream stream) {
		return cuGraphLaunch(exec, stream.handle);
	}

	@Override
	public int update(CudaGraphs.ExecHandle exec, CudaGraphs.GraphHandle graph, int[] why) {
		JnaUpdate entry = this.update;
		return (entry != null) ? entry.call(exec.address(), graph.address(), why) : CudaGraphs.UPDATE_UNAVAILABLE;
	}

	@Override
	public int destroyGraph(CudaGraphs.GraphHandle graph) {
		return cuGraphDestroy(graph);
	}

	@Override
	public int destroyExec(CudaGraphs.ExecHandle exec) {
		return cuGraphExecDestroy(exec);
	}

	@Override
	public int join(CudaStream origin, CudaStream member) {
		CUevent event = new CUevent();
		int result = cuEventCreate(event, CUevent_flags.CU_EVENT_DISABLE_TIMING);
		if (result != CudaErrors.SUCCESS) {
			return result;
		}
		try {
			result = cuEventRecord(event, member.handle);
			return (result != CudaErrors.SUCCESS) ? result : cuStreamWaitEvent(origin.handle, event, 0);
		}
		finally {
			cuEventDestroy(event);
		}
	}

	/** The JNA call of {@code cuGraphExecUpdate_v2}; loading this class needs JNA. */
	static final class JnaUpdate {

		/** {@code sizeof(CUgraphExecUpdateResultInfo)}: an enum, padding, two node pointers (64-bit only). */
		private static final int UPDATE_INFO_BYTES = 24;

		private final Function function;

		private JnaUpdate(Function function) {
			this.function = function;
		}

		/**
		 * @throws NoClassDefFoundError without JNA
		 * @throws UnsatisfiedLinkError when the driver library or the entry point is missing
		 */
		static JnaUpdate find() {
			return new JnaUpdate(NativeLibrary.getInstance("libcuda.so.1").getFunction("cuGraphExecUpdate_v2"));
		}

		int call(long exec, long graph, int[] why) {
			Memory info = new Memory(UPDATE_INFO_BYTES);
			info.clear();
			int result = this.function.invokeInt(new Object[] { new Pointer(exec), new Pointer(graph), info });
			why[0] = info.getInt(0);
			return result;
		}

	}

}
