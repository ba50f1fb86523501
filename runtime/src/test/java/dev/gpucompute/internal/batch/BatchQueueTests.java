package dev.gpucompute.internal.batch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

import dev.gpucompute.internal.batch.BatchQueue.Item;

/**
 * The batcher's queue: its deadline sweep costs what expires, not what waits (counted, never
 * timed); every item leaves it once, whichever way; and it keeps nothing of items that left.
 */
class BatchQueueTests {

	private static final long HOUR = 3_600_000_000_000L;

	/** The queue's deadline heap, which counts the items the sweep looks at (each one it peeks at). */
	private final CountingHeap heap = new CountingHeap();

	private final BatchQueue<Integer, Integer> queue = new BatchQueue<>(this.heap);

	private Item<Integer, Integer> item(int value, Object key, long enqueuedAt, long deadline) {
		return new Item<>(value, key, enqueuedAt, deadline, this.queue::remove);
	}

	@Test
	void theSweepLooksOnlyAtTheItemsThatExpireAndTheNextOne() {
		long t0 = 1_000;
		int n = 100_000;
		Item<Integer, Integer> early = null;
		for (int i = 0; i < n; i++) {
			this.queue.add(item(i, i % 4, t0 + i, t0 + i + HOUR));
			if (i == n / 2) {
				early = item(-1, "own", t0 + i, t0 + i + 10); // its own, shorter deadline, in the middle
				this.queue.add(early);
			}
		}
		List<Item<Integer, Integer>> expired = new ArrayList<>();
		long next = this.queue.removeExpired(t0 + n / 2 + 10, expired);
		assertThat(expired).containsExactly(early);
		assertThat(next).isEqualTo(t0 + HOUR);
		// The old sweep scanned every queued item under the batcher's lock: 100,001 here.
		assertThat(this.heap.peeks).as("items the sweep looked at").isEqualTo(2);
		assertThat(this.queue.size()).isEqualTo(n);

		expired.clear();
		this.queue.removeExpired(t0 + 99 + HOUR, expired);
		assertThat(expired).hasSize(100).extracting((item) -> item.value).startsWith(0, 1, 2).endsWith(99);
		assertThat(this.heap.peeks).isEqualTo(2 + 101);
		assertThat(this.heap.size()).isEqualTo(this.queue.size()).isEqualTo(n - 100);
	}

	@Test
	void itemsWithTheirOwnShorterDeadlineExpireBeforeOlderItemsAndOnlyOnce() {
		Item<Integer, Integer> a = item(1, "k", 0, 1_000);
		Item<Integer, Integer> b = item(2, "k", 1, 50); // its own, shorter deadline
		Item<Integer, Integer> c = item(3, "j", 2, BatchQueue.NONE);
		Item<Integer, Integer> d = item(4, "k", 3, 1_003);
		for (Item<Integer, Integer> each : List.of(a, b, c, d)) {
			this.queue.add(each);
		}
		List<Item<Integer, Integer>> expired = new ArrayList<>();
		assertThat(this.queue.removeExpired(60, expired)).isEqualTo(1_000);
		assertThat(expired).containsExactly(b);
		assertThat(this.queue.remove(b)).as("an expired item is gone").isFalse();

		List<Item<Integer, Integer>> dropped = new ArrayList<>();
		List<Item<Integer, Integer>> expiredAtTake = new ArrayList<>();
		List<Item<Integer, Integer>> batch = this.queue.take(70, 8, dropped, expiredAtTake);
		assertThat(batch).containsExactly(a, d);
		assertThat(dropped).isEmpty();
		assertThat(expiredAtTake).isEmpty();

		expired.clear();
		assertThat(this.queue.removeExpired(5_000, expired)).as("taken items are not in the heap").isEqualTo(BatchQueue.NONE);
		assertThat(expired).isEmpty();
		assertThat(this.queue.size()).isEqualTo(1);
		assertThat(this.heap.size()).isZero();
		assertThat(this.queue.take(5_000, 8, dropped, expiredAtTake)).containsExactly(c);
		assertThat(this.queue.size()).isZero();
	}

	@Test
	void cancelledAndDroppedItemsLeaveTheHeapAtOnce() {
		Item<Integer, Integer> cancelled = item(1, "k", 0, 100);
		Item<Integer, Integer> completedByCaller = item(2, "k", 1, 100);
		Item<Integer, Integer> kept = item(3, "k", 2, 200);
		this.queue.add(cancelled);
		this.queue.add(completedByCaller);
		this.queue.add(kept);
		assertThat(cancelled.future.cancel(false)).isTrue(); // tells the queue, as the batcher's hook does
		assertThat(this.heap.size()).isEqualTo(2);
		completedByCaller.future.complete(0);

		List<Item<Integer, Integer>> dropped = new ArrayList<>();
		List<Item<Integer, Integer>> expired = new ArrayList<>();
		assertThat(this.queue.take(250, 8, dropped, expired)).isEmpty();
		assertThat(dropped).containsExactly(completedByCaller);
		assertThat(expired).containsExactly(kept).doesNotContain(cancelled);
		assertThat(this.heap.size()).isZero();
		assertThat(this.queue.removeExpired(1_000, new ArrayList<>())).isEqualTo(BatchQueue.NONE);
	}

	@Test
	void underSteadyTrafficTakenBeforeTheirDeadlineTheHeapHoldsOnlyWhatWaits() {
		long now = 0;
		List<Item<Integer, Integer>> dropped = new ArrayList<>();
		List<Item<Integer, Integer>> expired = new ArrayList<>();
		for (int i = 0; i < 1_000_000; i++) {
			now += 1_000;
			this.queue.add(item(i, i % 3, now, now + HOUR));
			if (i % 10 == 9) {
				assertThat(this.queue.take(now, 8, dropped, expired)).isNotEmpty();
				this.queue.removeExpired(now, expired);
			}
			if (this.heap.size() != this.queue.size()) {
				throw new AssertionError("after item " + i + " the heap holds " + this.heap.size()
						+ " items, the queue " + this.queue.size());
			}
		}
		assertThat(expired).isEmpty();
		assertThat(dropped).isEmpty();
		while (this.queue.size() > 0) {
			this.queue.take(now, 1024, dropped, expired);
		}
		assertThat(this.heap.size()).isZero();
		assertThat(this.queue.removeExpired(now + 2 * HOUR, expired)).isEqualTo(BatchQueue.NONE);
		assertThat(expired).isEmpty();
	}

	@Test
	void removeAllEmptiesTheHeapToo() {
		for (int i = 0; i < 100; i++) {
			this.queue.add(item(i, i % 7, i, (i % 2 == 0) ? 1_000 + i : BatchQueue.NONE));
		}
		assertThat(this.queue.removeAll()).hasSize(100).allSatisfy((each) -> assertThat(each.queued).isFalse());
		assertThat(this.queue.size()).isZero();
		assertThat(this.heap.size()).isZero();
		assertThat(this.queue.removeExpired(10_000, new ArrayList<>())).isEqualTo(BatchQueue.NONE);
	}

	/**
	 * Random adds (default, own shorter and no deadlines), takes, cancels and sweeps against a plain
	 * model of the queue (a list per key, scanned): the same batches, the same expired items, the same
	 * next deadline; and every item leaves exactly once.
	 */
	@Test
	void behavesLikeAPlainScanOfTheQueue() {
		SplittableRandom random = new SplittableRandom(34);
		Model model = new Model();
		List<Item<Integer, Integer>> added = new ArrayList<>();
		Set<Item<Integer, Integer>> left = new HashSet<>();
		long now = 0;
		for (int step = 0; step < 200_000; step++) {
			now += random.nextInt(50);
			int op = random.nextInt(100);
			List<Item<Integer, Integer>> out = new ArrayList<>();
			if (op < 50) {
				long deadline = switch (random.nextInt(4)) {
					case 0 -> BatchQueue.NONE;
					case 1 -> now + random.nextInt(200); // its own, shorter deadline
					default -> now + 1_000; // the batcher's timeout
				};
				Item<Integer, Integer> item = item(step, random.nextInt(5), now, deadline);
				assertThat(this.queue.add(item)).isEqualTo(model.add(item));
				added.add(item);
			}
			else if (op < 70) {
				List<Item<Integer, Integer>> dropped = new ArrayList<>();
				List<Item<Integer, Integer>> expired = new ArrayList<>();
				List<Item<Integer, Integer>> modelDropped = new ArrayList<>();
				List<Item<Integer, Integer>> modelExpired = new ArrayList<>();
				int max = 1 + random.nextInt(8);
				List<Item<Integer, Integer>> batch = this.queue.take(now, max, dropped, expired);
				assertThat(batch).isEqualTo(model.take(now, max, modelDropped, modelExpired));
				assertThat(dropped).isEqualTo(modelDropped);
				assertThat(expired).isEqualTo(modelExpired);
				out.addAll(batch);
				out.addAll(dropped);
				out.addAll(expired);
			}
			else if (op < 80 && !added.isEmpty()) {
				Item<Integer, Integer> target = added.get(random.nextInt(added.size()));
				boolean wasQueued = model.contains(target);
				model.remove(target);
				if (random.nextBoolean()) {
					target.future.cancel(false); // removes it from the queue, as the batcher's hook does
				}
				else {
					assertThat(this.queue.remove(target)).isEqualTo(wasQueued);
				}
				assertThat(target.queued).isFalse();
				if (wasQueued) {
					out.add(target);
				}
			}
			else if (op < 85 && !added.isEmpty()) {
				// Completed by its caller while queued: it stays until a take drops it or a sweep expires it.
				added.get(random.nextInt(added.size())).future.complete(-1);
			}
			else {
				List<Item<Integer, Integer>> expired = new ArrayList<>();
				List<Item<Integer, Integer>> modelExpired = new ArrayList<>();
				assertThat(this.queue.removeExpired(now, expired)).isEqualTo(model.removeExpired(now, modelExpired));
				assertThat(expired).containsExactlyInAnyOrderElementsOf(modelExpired);
				for (int i = 1; i < expired.size(); i++) {
					assertThat(expired.get(i).deadline).isGreaterThanOrEqualTo(expired.get(i - 1).deadline);
				}
				out.addAll(expired);
			}
			for (Item<Integer, Integer> each : out) {
				assertThat(each.queued).isFalse();
				assertThat(left.add(each)).as("item %s left the queue twice", each.value).isTrue();
			}
			assertThat(this.queue.size()).isEqualTo(model.size());
			assertThat(this.queue.largestKey()).isEqualTo(model.largestKey());
			if (model.size() > 0) {
				assertThat(this.queue.nanosUntilReady(now, 6, 300)).isEqualTo(model.nanosUntilReady(now, 6, 300));
			}
		}
		assertThat(this.heap.size()).isEqualTo(model.withDeadline());
		assertThat(left.size() + this.queue.size()).as("every item either left once or still waits").isEqualTo(added.size());
	}

	/** The queue as it was: a list per key, scanned. */
	private static final class Model {

		private final Map<Object, List<Item<Integer, Integer>>> queues = new LinkedHashMap<>();

		int add(Item<Integer, Integer> item) {
			List<Item<Integer, Integer>> list = this.queues.computeIfAbsent(item.key, (k) -> new ArrayList<>());
			list.add(item);
			return list.size();
		}

		boolean contains(Item<Integer, Integer> item) {
			List<Item<Integer, Integer>> list = this.queues.get(item.key);
			return list != null && list.contains(item);
		}

		void remove(Item<Integer, Integer> item) {
			List<Item<Integer, Integer>> list = this.queues.get(item.key);
			if (list != null && list.remove(item) && list.isEmpty()) {
				this.queues.remove(item.key);
			}
		}

		int size() {
			return this.queues.values().stream().mapToInt(List::size).sum();
		}

		int withDeadline() {
			return (int) this.queues.values()
				.stream()
				.flatMap(List::stream)
				.filter((item) -> item.deadline != BatchQueue.NONE)
				.count();
		}

		int largestKey() {
			return this.queues.values().stream().mapToInt(List::size).max().orElse(0);
		}

		long nanosUntilReady(long now, int maxBatchSize, long maxDelayNanos) {
			long oldest = Long.MAX_VALUE;
			for (List<Item<Integer, Integer>> list : this.queues.values()) {
				if (list.size() >= maxBatchSize) {
					return 0;
				}
				oldest = Math.min(oldest, list.get(0).enqueuedAt);
			}
			return Math.max(0, maxDelayNanos - (now - oldest));
		}

		List<Item<Integer, Integer>> take(long now, int max, List<Item<Integer, Integer>> dropped,
				List<Item<Integer, Integer>> expired) {
			List<Item<Integer, Integer>> batch = new ArrayList<>();
			while (batch.isEmpty() && size() > 0) {
				Map.Entry<Object, List<Item<Integer, Integer>>> oldest = null;
				for (Map.Entry<Object, List<Item<Integer, Integer>>> entry : this.queues.entrySet()) {
					if (oldest == null || entry.getValue().get(0).enqueuedAt < oldest.getValue().get(0).enqueuedAt) {
						oldest = entry;
					}
				}
				List<Item<Integer, Integer>> list = oldest.getValue();
				while (batch.size() < max && !list.isEmpty()) {
					Item<Integer, Integer> item = list.remove(0);
					if (item.future.isDone()) {
						dropped.add(item);
					}
					else if (item.deadline <= now) {
						expired.add(item);
					}
					else {
						batch.add(item);
					}
				}
				if (list.isEmpty()) {
					this.queues.remove(oldest.getKey());
				}
			}
			return batch;
		}

		long removeExpired(long now, List<Item<Integer, Integer>> expired) {
			long next = BatchQueue.NONE;
			for (var lists = this.queues.values().iterator(); lists.hasNext();) {
				List<Item<Integer, Integer>> list = lists.next();
				for (var items = list.iterator(); items.hasNext();) {
					Item<Integer, Integer> item = items.next();
					if (item.deadline <= now) {
						items.remove();
						expired.add(item);
					}
					else {
						next = Math.min(next, item.deadline);
					}
				}
				if (list.isEmpty()) {
					lists.remove();
				}
			}
			return next;
		}

	}

	/** A deadline heap that counts how often the queue looks at its earliest item. */
	private static final class CountingHeap extends DeadlineHeap<Integer, Integer> {

		long peeks;

		@Override
		Item<Integer, Integer> peek() {
			this.peeks++;
			return super.peek();
		}

	}

}
