# The two commands of the README:
#   make report   renders results/report/index.html (creating .venv/ first)
#   make test     runs the tests (creating .venv/ first)
# Where nvidia-smi reports CUDA 12 or 13, CuPy for that version is installed
# too, and the report is measured on the GPU instead of replayed.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
comma := ,
CUDA_MAJOR := $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: \([0-9]*\)\..*/\1/p' | head -n 1)
CUDA_EXTRA := $(filter cuda12 cuda13,cuda$(CUDA_MAJOR))
EXTRAS := test$(if $(CUDA_EXTRA),$(comma)$(CUDA_EXTRA))
# the tests in one process a core, four at most (pytest-xdist; TEST_WORKERS=0: one process)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: report test clean

report: $(BIN)/.installed
	$(BIN)/snakemake --cores 1
	@echo "The report: $(CURDIR)/results/report/index.html"

test: $(BIN)/.installed
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --editable '.[$(EXTRAS)]'
	touch $@

clean:
	rm -rf results .snakemake
