# Convenience entry points; everything is done by the scripts.
.PHONY: all main test bench
all:
	meson setup build 2>/dev/null || true
	meson compile -C build
main:
	./scripts/main-job
test:
	./scripts/test-all
bench:
	./scripts/bench
