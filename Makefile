# The README's two commands. Both set everything up first (tools/setup.sh).
#   make demo   epochgate in front of an embedded 3-broker cluster, real clients through it
#   make test   every test (unit, codec, integration, clients, scenario, ops, faults)
BUILD ?= build

.PHONY: demo test build clean
build:
	tools/setup.sh $(BUILD)

demo: build
	tools/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 600 -j2

clean:
	rm -rf $(BUILD)
