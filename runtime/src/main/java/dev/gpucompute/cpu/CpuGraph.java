package dev.gpucompute.cpu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link CpuCapture} recorded: the operations in capture order (a topological order: an
 * operation depends only on earlier ones) and, for each, the operations it waits for. Immutable, so
 * an instantiation shares it and a replay in flight keeps running the graph it started with when an
 * update replaces it.
 */
final class CpuGraph implements NativeGraph {

	/** An operation of a graph, run at every replay. */
	abstract static class Node {

		/**
		 * What makes two captures the same shape for an update in place: the kind of operation and,
		 * for a kernel, which kernel.
		 */
		abstract String shape();

	}

	/** A kernel launch: its blocks, on the replay's worker when one worker runs them, else spread. */
	static final class KernelNode extends Node {

		final CpuKernelRun work;

		KernelNode(CpuKernelRun work) {
			this.work = work;
		}

		@Override
		String shape() {
			return "kernel '" + this.work.kernel + "'";
		}

	}

	/** A copy or a fill: a host task. */
	static final class TaskNode extends Node {

		final Runnable body;

		TaskNode(Runnable body) {
			this.body = body;
		}

		@Override
		String shape() {
			return "copy or fill";
		}

	}

	final Node[] nodes;

	/** For each node, the nodes it waits for. */
	final int[][] dependencies;

	/** For each node, the nodes that wait for it. */
	final int[][] successors;

	/** The nodes that wait for nothing. */
	final int[] roots;

	CpuGraph(List<Node> nodes, List<int[]> dependencies) {
		this.nodes = nodes.toArray(new Node[0]);
		this.dependencies = dependencies.toArray(new int[0][]);
		int n = this.nodes.length;
		List<List<Integer>> next = new ArrayList<>(n);
		List<Integer> roots = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			next.add(new ArrayList<>(1));
		}
		for (int i = 0; i < n; i++) {
			if (this.dependencies[i].length == 0) {
				roots.add(i);
			}
			for (int dependency : this.dependencies[i]) {
				next.get(dependency).add(i);
			}
		}
		this.successors = new int[n][];
		for (int i = 0; i < n; i++) {
			this.successors[i] = next.get(i).stream().mapToInt(Integer::intValue).toArray();
		}
		this.roots = roots.stream().mapToInt(Integer::intValue).toArray();
	}

	@Override
	public int nodeCount() {
		return this.nodes.length;
	}

	@Override
	public NativeGraphExec instantiate() {
		return new CpuGraphExec(this);
	}

	@Override
	public void destroy() {
		// Nothing native; an instantiation shares the arrays.
	}

	/**
	 * Why {@code other} is not the same shape as this graph (another number of operations, another
	 * kernel, other dependencies), or {@code null} when it is.
	 */
	@Nullable String differenceFrom(CpuGraph other) {
		if (other.nodes.length != this.nodes.length) {
			return "the new capture has " + other.nodes.length + " operations, the graph " + this.nodes.length;
		}
		for (int i = 0; i < this.nodes.length; i++) {
			String was = this.nodes[i].shape();
			String now = other.nodes[i].shape();
			if (!was.equals(now)) {
				return "operation " + i + " is a " + now + " in the new capture, a " + was + " in the graph";
			}
			if (!Arrays.equals(this.dependencies[i], other.dependencies[i])) {
				return "operation " + i + " (" + now + ") waits for other operations in the new capture";
			}
		}
		return null;
	}

}
