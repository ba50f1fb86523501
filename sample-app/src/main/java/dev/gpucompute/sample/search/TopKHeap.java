package dev.gpucompute.sample.search;

/**
 * The best {@code capacity} of a stream of (score, id) candidates by the kernels' total order
 * ({@link KnnKernels#better}: the higher score, then the lower id), kept in a bounded heap whose root
 * is the worst kept candidate: about one comparison per candidate once the heap is full, since most
 * candidates lose to the root on the score alone. The CPU twins use it where the CUDA kernels sort
 * in shared memory; the order is total, so both keep exactly the same entries.
 *
 * <p>Not thread-safe: one per worker (or per query of a block), reused with {@link #reset}.
 */
final class TopKHeap {

	private final float[] score;

	private final int[] id;

	private int capacity;

	private int size;

	/** The root's score once the heap is full, else NaN (every comparison with NaN is false). */
	private float worst = Float.NaN;

	/** A heap over the given arrays (at least {@code capacity} long), which it fills. */
	TopKHeap(float[] score, int[] id) {
		this.score = score;
		this.id = id;
	}

	/** A heap with arrays of its own for up to {@code maxCapacity} entries. */
	TopKHeap(int maxCapacity) {
		this(new float[maxCapacity], new int[maxCapacity]);
	}

	/** Empties the heap and sets how many candidates it keeps (at most its arrays' length). */
	TopKHeap reset(int capacity) {
		this.capacity = capacity;
		this.size = 0;
		this.worst = Float.NaN;
		return this;
	}

	/** Offers one candidate. */
	void offer(float s, int d) {
		if (this.size < this.capacity) {
			// Sift up: a parent must not rank before (be better than) its child.
			int c = this.size++;
			while (c > 0) {
				int parent = (c - 1) >> 1;
				if (!KnnKernels.better(this.score[parent], this.id[parent], s, d)) {
					break;
				}
				this.score[c] = this.score[parent];
				this.id[c] = this.id[parent];
				c = parent;
			}
			this.score[c] = s;
			this.id[c] = d;
			if (this.size == this.capacity) {
				this.worst = this.score[0];
			}
			return;
		}
		// Most candidates lose to the worst kept one on the score alone.
		if (s < this.worst || this.capacity == 0) {
			return;
		}
		if (KnnKernels.better(s, d, this.score[0], this.id[0])) {
			siftDown(this.size, s, d);
			this.worst = this.score[0];
		}
	}

	/**
	 * Sorts the kept candidates best first in place (a heap sort) and returns how many there are;
	 * the heap must be {@link #reset} before it takes candidates again.
	 */
	int sort() {
		for (int end = this.size - 1; end > 0; end--) {
			float s = this.score[end];
			int d = this.id[end];
			this.score[end] = this.score[0];
			this.id[end] = this.id[0];
			siftDown(end, s, d);
		}
		return this.size;
	}

	/**
	 * Sorts (see {@link #sort}) and pads the entries from the kept count to {@code length} with
	 * {@code (-inf, NO_ID)}, as a sorted list of a range with fewer rows than k ends on the device.
	 */
	void sortPadded(int length) {
		int kept = sort();
		java.util.Arrays.fill(this.score, kept, length, Float.NEGATIVE_INFINITY);
		java.util.Arrays.fill(this.id, kept, length, KnnKernels.NO_ID);
	}

	float[] scores() {
		return this.score;
	}

	int[] ids() {
		return this.id;
	}

	/** Places (s, d) at the root of a heap of {@code heapSize} and sifts it down. */
	private void siftDown(int heapSize, float s, int d) {
		int c = 0;
		while (true) {
			int child = 2 * c + 1;
			if (child >= heapSize) {
				break;
			}
			int right = child + 1;
			if (right < heapSize && KnnKernels.better(this.score[child], this.id[child], this.score[right], this.id[right])) {
				child = right;
			}
			// child is now the worse of the two; stop when (s, d) is no better than it.
			if (!KnnKernels.better(s, d, this.score[child], this.id[child])) {
				break;
			}
			this.score[c] = this.score[child];
			this.id[c] = this.id[child];
			c = child;
		}
		this.score[c] = s;
		this.id[c] = d;
	}

}
