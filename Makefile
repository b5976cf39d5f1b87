# The README's two commands. Both set everything up first (tools/setup.sh).
#   make demo   epochgate in front of an embedded 3-broker cluster, real clients through it
#               (make demo TLS=1: the same over TLS on both sides;
#                make demo KAFKA=real: the same story on a real Apache Kafka cluster)
#   make test   every test (unit, codec, integration, clients, scenario, ops, faults, tls,
#               realkafka),
#               then the list of anything skipped
#   make package  a binary tarball and a .deb of epochgate (CPack)
BUILD ?= build

.PHONY: demo test build clean package
build:
	tools/setup.sh $(BUILD)

demo: build
	tools/demo.sh $(BUILD) $(if $(filter 1 yes true,$(TLS)),--tls) $(if $(filter real,$(KAFKA)),--real)

# Every registered test; a summary at the end lists what was skipped and why
# (with CI=true a skip, or a label with no tests, fails the run).
REQUIRED_LABELS ?= unit,codec,integration,clients,scenario,ops,faults,tls,realkafka
test: build
	tools/ctest_summary.py $(BUILD) --require-labels $(REQUIRED_LABELS) -- \
	  --output-on-failure --timeout 600 -j2

# Binary tarball and .deb of the program (build/epochgate-*.tar.gz, build/epochgate_*.deb).
package: build
	cmake --build $(BUILD) --target package

clean:
	rm -rf $(BUILD)
