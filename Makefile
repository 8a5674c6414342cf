# edihub — see README.md.
CARGO ?= cargo

.PHONY: run test fmt lint build release clean

## Build and serve on the embedded SQLite database (data/edihub.db) with config/edihub.toml.
run:
	$(CARGO) run --locked -p edihub -- --config config/edihub.toml serve

## The whole suite on SQLite and PostgreSQL (provisions PostgreSQL when needed).
test:
	./scripts/test.sh

fmt:
	$(CARGO) fmt --all

## Formatting and clippy, warnings as errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

build:
	$(CARGO) build --workspace --locked

release:
	$(CARGO) build --release --locked -p edihub

clean:
	$(CARGO) clean
	rm -rf data .pgtest
