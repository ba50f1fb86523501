package dev.gpucompute.spi;

import java.util.Locale;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Tests for {@link ByteSizes}: the one byte format of the runtime's logs and reports. */
class ByteSizesTests {

	@Test
	void bytesUseBinaryUnits() {
		assertThat(ByteSizes.format(512)).isEqualTo("512 B");
		assertThat(ByteSizes.format(80L << 30)).isEqualTo("80.0 GiB");
	}

	@Test
	void unitsStepAtEach1024AndStopAtTebibytes() {
		assertThat(ByteSizes.format(0)).isEqualTo("0 B");
		assertThat(ByteSizes.format(1023)).isEqualTo("1023 B");
		assertThat(ByteSizes.format(1024)).isEqualTo("1.0 KiB");
		assertThat(ByteSizes.format(1536)).isEqualTo("1.5 KiB");
		assertThat(ByteSizes.format(3L << 20)).isEqualTo("3.0 MiB");
		assertThat(ByteSizes.format(2048L << 40)).isEqualTo("2048.0 TiB");
	}

	@Test
	void theDecimalSeparatorDoesNotFollowTheDefaultLocale() {
		Locale previous = Locale.getDefault();
		Locale.setDefault(Locale.GERMANY);
		try {
			assertThat(ByteSizes.format(1536)).isEqualTo("1.5 KiB");
		}
		finally {
			Locale.setDefault(previous);
		}
	}

}
