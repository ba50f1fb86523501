package dev.gpucompute.sample;

import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.util.unit.DataSize;

import dev.gpucompute.sample.search.CollectionStore;
import dev.gpucompute.sample.storage.StorageFailure;

/**
 * Health of the sample's storage, component {@code storage}: OUT_OF_SERVICE while the data
 * directory's file system has less usable space than {@code sample.storage.health.min-free}, or
 * while a collection's write-ahead log refuses writes (after a failed force, until a fold into its
 * snapshot succeeds; the store retries it every {@code sample.storage.retry-after}). Reads still
 * work then; OUT_OF_SERVICE rather than DOWN says that the process is alive and should not be
 * restarted, only taken out of rotation, which a readiness group that includes this component does
 * (see docs/sample-app.md). It comes back UP by itself once space is free and the logs are folded.
 *
 * <p>Details: the directory, its usable bytes (-1 where the file system's figures cannot be read,
 * which alone does not take the component out of service), the threshold, the logs that refuse writes and the
 * folds that failed (with reasons), and how many writes the storage refused since start-up, with the
 * last one. Thread-safe; it only reads the store's state and the file system.
 */
final class StorageHealthIndicator extends AbstractHealthIndicator {

	private final CollectionStore store;

	private final DataSize minFree;

	StorageHealthIndicator(CollectionStore store, DataSize minFree) {
		super("Checking the sample's storage failed");
		this.store = store;
		this.minFree = minFree;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) throws Exception {
		CollectionStore.StorageStatus status = this.store.storageStatus();
		long free = StorageFailure.usableSpace(status.directory());
		Map<String, Object> details = new LinkedHashMap<>();
		details.put("path", status.directory().toString());
		// -1: the file system's figures cannot be read; the logs' state still decides.
		details.put("free", free);
		details.put("minFree", this.minFree.toBytes());
		details.put("brokenLogs", status.brokenLogs());
		details.put("failedFolds", status.failedFolds());
		details.put("refusedWrites", status.refusedWrites());
		if (status.lastRefusal() != null) {
			details.put("lastRefusal", status.lastRefusal());
		}
		// Written one after the other: a check between the two writes of the first refusal sees no time yet.
		if (status.lastRefusalAt() != null) {
			details.put("lastRefusalAt", status.lastRefusalAt().toString());
		}
		if (free >= 0 && free < this.minFree.toBytes()) {
			builder.outOfService()
				.withDetail("reason", "the data directory's file system has " + free
						+ " bytes usable, less than sample.storage.health.min-free (" + this.minFree.toBytes() + ")");
		}
		else if (!status.brokenLogs().isEmpty()) {
			builder.outOfService()
				.withDetail("reason", "the write-ahead logs of " + status.brokenLogs().keySet()
						+ " refuse writes until they are folded into their snapshots (retried in the background)");
		}
		else {
			builder.up();
		}
		builder.withDetails(details);
	}

}
