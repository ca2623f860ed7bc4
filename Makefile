# Thin wrapper: the scripts in scripts/ do the work.
.PHONY: build kubectl test package

build:
	scripts/build

kubectl:
	scripts/kubectl-build

test:
	scripts/test

package:
	scripts/package
