# The two commands of the README:
#   make demo   runs the main job: a demo workload, then an audit of the journal it wrote
#   make test   runs the whole test suite (what CI runs): the second reader of the format on the
#               golden journals (format-check, below), the Swift tests, ThreadSanitizer over the
#               concurrency suites, the benchmark's small mode as a smoke test, and DocC's check
#               of the libraries' documentation (scripts/doc-check)
#   make bench  builds the benchmark in release mode and runs it in full (Benchmarks/RESULTS.md)
#   make fuzz   runs each libFuzzer target for FUZZ_SECONDS seconds (docs/RELIABILITY.md)
#   make format-check  reads the golden journals with scripts/journal-reader.py, a second reader
#               written from Journal/FORMAT.md and Journal/SNAPSHOTS.md alone (needs python3 and
#               liblz4.so.1), checks them with its --verify and compares its reading with their
#               expected files (golden/snapshots-v1 and -v2: its verdicts on snapshot files)
# Both install what is missing first (scripts/install-deps).

SWIFT ?= swift
DEMO_DIR ?= rewind-demo
DEMO_EVENTS ?= 200000
DEMO_SEED ?= 1
# The demo's settings reach its recipes through the environment ("$$DEMO_DIR"), never pasted into a
# shell line, so that a directory named `it's`, `say "hi"`, `$HOME`, `a\b`, `my demo` or `-x` is one
# argument, unchanged (the directory follows `--`, so a name starting with - is no option). They are
# taken as written: make expands no `$` or `$(...)` in them.
override DEMO_DIR := $(value DEMO_DIR)
override DEMO_EVENTS := $(value DEMO_EVENTS)
override DEMO_SEED := $(value DEMO_SEED)
export DEMO_DIR DEMO_EVENTS DEMO_SEED
# The rewind that `make demo` runs, once built (a test runs the recipe with the debug one).
REWIND ?= .build/release/rewind
FUZZ_SECONDS ?= 60
# Release builds (demo, bench) write the C targets' debug information as DWARF 4: valgrind 3.19
# (Debian's), which the benchmark's profiles use, cannot read clang's DWARF 5 for them and gives up
# on the whole binary. Code generation is the same.
RELEASE_FLAGS ?= -Xcc -gdwarf-4
# The suites ThreadSanitizer runs in `make test` (docs/RELIABILITY.md): every test that runs code on
# several threads or tasks at once.
TSAN_SUITES ?= RewindJournalTests\.(ConcurrencyTests|ConcurrentCloseTests|FollowTests|LockTests|CompactionTests|SyncAcknowledgementTests|BlockModeTests)|RewindTests\.|NotebookTests\.ConcurrencyStressTests
# Left out of them: tests of counts, not of races, whose thousands of commands under the sanitizer
# took four minutes and starved the suites' time limits (5,000 commands at the gate; 1,026 synced
# commands in a row). The main suite runs them.
TSAN_SKIP ?= moreWaitingCommandsThanOneAppendTakesAreSplit|theWorkingCopyIsDroppedAfterEnoughQuietCommands

.PHONY: deps demo test test-tsan bench fuzz lint doc-check format format-check clean-demo

deps:
	@scripts/install-deps

demo: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS) --product rewind
	scripts/demo-dir-check "$$DEMO_DIR"
	rm -rf -- "$$DEMO_DIR"
	$(REWIND) demo --events "$$DEMO_EVENTS" --seed "$$DEMO_SEED" --durability always -- "$$DEMO_DIR"
	$(REWIND) verify -- "$$DEMO_DIR"
	$(REWIND) stats -- "$$DEMO_DIR"
	$(REWIND) log --limit 5 -- "$$DEMO_DIR"

test: deps lint format-check
	$(SWIFT) build --build-tests -Xswiftc -warnings-as-errors
	scripts/doc-check
	$(SWIFT) test -Xswiftc -warnings-as-errors
	$(MAKE) test-tsan
	$(SWIFT) run -Xswiftc -warnings-as-errors rewind-bench --small --json .build/bench-small.json

# ThreadSanitizer over the concurrency suites, in its own scratch path; any report fails the run,
# and none is suppressed. REWIND_TSAN puts the package's `Lock`s on pthread mutexes, whose every
# acquire it sees (docs/RELIABILITY.md, entry 373). Its lock-order (deadlock) detector nearly
# doubles the run's time on two cores; `make test-tsan TSAN_DEADLOCKS=1` turns it on.
TSAN_FLAGS = --sanitize=thread -Xswiftc -DREWIND_TSAN --scratch-path .build/tsan
TSAN_DEADLOCKS ?= 0
test-tsan:
	$(SWIFT) build --build-tests $(TSAN_FLAGS)
	TSAN_OPTIONS="halt_on_error=1 detect_deadlocks=$(TSAN_DEADLOCKS)" $(SWIFT) test --skip-build $(TSAN_FLAGS) \
	  --filter '$(TSAN_SUITES)' --skip '$(TSAN_SKIP)'

bench: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS) --product rewind-bench
	.build/release/rewind-bench --full --json Benchmarks/results/latest.json

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz

lint:
	@scripts/lint

GOLDEN = Journal/golden
format-check: deps
	python3 scripts/journal-reader.py $(GOLDEN)/v1/journal --verify
	python3 scripts/journal-reader.py $(GOLDEN)/checkpoints-v1/journal --verify
	python3 scripts/journal-reader.py $(GOLDEN)/notebook-v1/journal --verify
	@mkdir -p .build/format-check
	python3 scripts/journal-reader.py $(GOLDEN)/v1/journal --contents > .build/format-check/contents.json
	python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
	  $(GOLDEN)/v1/contents.json .build/format-check/contents.json
	python3 scripts/journal-reader.py $(GOLDEN)/checkpoints-v1/journal > .build/format-check/log.txt
	diff -u $(GOLDEN)/checkpoints-v1/log.txt .build/format-check/log.txt
	python3 scripts/journal-reader.py $(GOLDEN)/notebook-v1/journal --jsonl > .build/format-check/log.jsonl
	diff -u $(GOLDEN)/notebook-v1/log.jsonl .build/format-check/log.jsonl
	@# The golden snapshot files of each format (SnapshotGoldenTests): whole, damaged as each check
	@# names, two past the end (so --verify exits 1); its lines naming them (notes, then problems)
	@# are their reading.
	for v in 1 2; do \
	  python3 scripts/journal-reader.py $(GOLDEN)/snapshots-v$$v/journal --verify \
	    > .build/format-check/snapshots.out 2> .build/format-check/snapshots.err; \
	  status=$$?; test $$status -eq 1 || { cat .build/format-check/snapshots.err; echo "v$$v: exit $$status, not 1"; exit 1; }; \
	  cat .build/format-check/snapshots.out .build/format-check/snapshots.err | grep ' snapshots/' \
	    > .build/format-check/snapshots-v$$v.txt; \
	  diff -u $(GOLDEN)/snapshots-v$$v/snapshots.txt .build/format-check/snapshots-v$$v.txt || exit 1; \
	done

doc-check: deps
	$(SWIFT) build
	scripts/doc-check

format:
	$(SWIFT) format --in-place --recursive --parallel Package.swift Sources Tests Benchmarks Fuzz

clean-demo:
	scripts/demo-dir-check "$$DEMO_DIR"
	rm -rf -- "$$DEMO_DIR"
