# Thin wrapper: the scripts in scripts/ do the work.
.PHONY: build kubectl helm test package

build:
	scripts/build

kubectl:
	scripts/kubectl-build

helm:
	scripts/helm-build

test:
	scripts/test

package:
	scripts/package
