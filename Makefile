# edihub — see README.md.
CARGO ?= cargo

.PHONY: run listen check-config test docs-check console-screenshots demo-secrets fmt lint build release clean

## Build and serve on the embedded SQLite database (data/edihub.db) with config/edihub.toml.
# Development webhook secrets for the demo integrations (docs/webhooks.md).
DEMO_SECRETS = SHOP_SECRET=dev-shop-secret GITHUB_SECRET=dev-github-secret \
	STD_WEBHOOK_SECRET=whsec_ZGV2LXN0ZC13ZWJob29rLXNlY3JldA== \
	STRIPE_SECRET=whsec_dev_stripe_secret GUBEE_SECRET=dev-gubee-secret
# The demo AS2 station's key and certificates (config/as2-demo/, docs/as2.md).
DEMO_AS2 = EDIHUB_SECRET_AS2_DEMO_KEY="$$(cat config/as2-demo/edihub.key)" \
	EDIHUB_SECRET_AS2_DEMO_CERT="$$(cat config/as2-demo/edihub.crt)" \
	EDIHUB_SECRET_AS2_DEMO_PARTNER_CERT="$$(cat config/as2-demo/partner.crt)"

run:
	$(DEMO_SECRETS) $(DEMO_AS2) $(CARGO) run --locked -p edihub -- --config config/edihub.toml serve

## The demo receiver of deliveries (config/edihub.toml's destination `demo-listener`), in a second terminal.
listen:
	$(DEMO_SECRETS) $(CARGO) run --locked -p edihub -- listen --port 9999 --secret-env STD_WEBHOOK_SECRET

## Validate config/edihub.toml (with the demo secrets).
check-config:
	$(DEMO_SECRETS) $(DEMO_AS2) $(CARGO) run --locked -p edihub -- --config config/edihub.toml check-config

## The whole suite on SQLite and PostgreSQL (provisions PostgreSQL when needed), then docs-check.
test:
	./scripts/test.sh

## Run the shell examples of README.md and docs/*.md against a fresh hub (docs/testing.md, "Docs that run").
docs-check:
	./scripts/docs-check.sh

## Screenshots of every console page into docs/console/ (headless Chromium: tests/api/browser.rs, browser_console.rs, as2/partners.rs).
console-screenshots:
	EDIHUB_CONSOLE_SCREENSHOTS=docs/console $(CARGO) test --locked -p edihub-server --test api browser::console_pages_load_in_chromium
	EDIHUB_CONSOLE_SCREENSHOTS=docs/console $(CARGO) test --locked -p edihub-server --test api browser_console::redeliver_in_chromium
	EDIHUB_CONSOLE_SCREENSHOTS=docs/console $(CARGO) test --locked -p edihub-server --test api as2::partners::partners_page_in_chromium

## Print the demo secrets (used by scripts/docs-check.sh).
demo-secrets:
	@echo $(DEMO_SECRETS)

fmt:
	$(CARGO) fmt --all

## Formatting, clippy and rustdoc with warnings as errors (rustdoc: no doc link
## that leads nowhere or to a private item), and no import circle of more than
## two files in the crates listed (scripts/import-cycles.py).
CYCLE_FREE_CRATES = crates/edihub-core crates/edihub-store crates/edihub-server crates/edihub
lint:
	./scripts/build-deps.sh
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked
	python3 scripts/import-cycles.py $(CYCLE_FREE_CRATES)

build:
	./scripts/build-deps.sh
	$(CARGO) build --workspace --locked

release:
	./scripts/build-deps.sh
	$(CARGO) build --release --locked -p edihub

clean:
	$(CARGO) clean
	rm -rf data .pgtest .pgbouncer

## The benchmark: release build, throwaway PostgreSQL, wrk + pgbench; writes BENCHMARKS.md.
.PHONY: bench
bench:
	./scripts/bench.sh

## Fuzz edihub-core with cargo-fuzz: every target for FUZZ_SECONDS (default 600),
## one at a time, at low priority; FUZZ_TARGETS picks some (RELIABILITY.md, "Fuzzing").
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=
.PHONY: fuzz
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./fuzz/run.sh $(FUZZ_TARGETS)

## Long fault tests (the `chaos_*` tests in crates/edihub/tests/faults, scaled by
## EDIHUB_CHAOS_SCALE; chaos_f9 through PgBouncer) and schemathesis against a live hub; see RELIABILITY.md.
.PHONY: chaos
chaos:
	./scripts/test.sh --test faults -- --ignored chaos_ --skip chaos_f9
	EDIHUB_TEST_POOLED=1 ./scripts/test.sh --test faults -- --ignored chaos_f9
	./scripts/schemathesis.sh
