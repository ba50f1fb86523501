package dev.gpucompute.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An embedding-search service on the gpu-compute starter: collections of float32 vectors in device
 * memory, searched by GPU kernels (or their CPU twins where no GPU is present).
 */
@SpringBootApplication
public class SampleApplication {

	public static void main(String[] args) {
		SpringApplication.run(SampleApplication.class, args);
	}

}
