# Two entry points for a fresh machine with Python 3, pip and make:
#   make demo   set up .venv and run the TF1 slowdown demo (a public Tesla P4 report, ported), then the TF 2 retracing demo
#   make test   set up .venv and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demos need graphguard, TensorFlow, scikit-learn and psutil (the demo extra), not the test stack.
$(BIN)/.graphguard-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $@

$(BIN)/.graphguard-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# A later non-editable install (pip install '.[plot]') puts graphguard in site-packages, away from the
# demo scripts in fixtures/: install this clone again, editable, when that happened.
demo: $(BIN)/.graphguard-demo
	@$(BIN)/python -c "import graphguard, os, sys; sys.exit(os.path.dirname(os.path.dirname(os.path.abspath(graphguard.__file__))) != os.getcwd())" \
		|| $(BIN)/python -m pip install --quiet -e '.[demo]'
	$(BIN)/graphguard demo
	$(BIN)/graphguard demo tf2

test: $(BIN)/.graphguard-installed
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4

clean:
	rm -rf $(VENV) build *.egg-info
