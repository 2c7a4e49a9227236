#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/fifoq; .ci/run runs it. Needs Go and
# the Go module proxy, nothing else (no Kubernetes cluster, no Docker):
#   1. builds helm (the version below, with go install) and fifoq (this
#      checkout);
#   2. helm lint --strict for 1, 3 and 5 nodes (it renders NOTES.txt too,
#      and checks the values against values.schema.json);
#   3. runs deploy/helm/check, a Go module of its own, whose tests
#      - render the chart with helm template for 1, 3 and 5 nodes and other
#        values, and decode every object strictly into the Kubernetes 1.32
#        API's Go types (k8s.io/api), with the checks a decoder cannot make;
#      - check that wrong values are refused with a message;
#      - start the rendered StatefulSet's pods as fifoq processes, their
#        DNS names mapped to loopback addresses (127.0.93.x): 3 pods form a
#        cluster over mutual TLS, grow to 5 with the pods a 5-replica
#        upgrade renders, lose and regain their leader, shrink back; one
#        pod alone grows to 3.
set -euo pipefail
cd "$(dirname "$0")"

HELM_VERSION=v3.22.0
# The Kubernetes version helm assumes without a cluster (helm template,
# lint): the one the check's API types are of. helm's own release builds
# set it with these flags; go install alone would leave 1.20, below the
# chart's kubeVersion.
KUBE_MINOR=32

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$SECONDS
h=helm.sh/helm/v3
GOBIN="$work/bin" go install -ldflags "-X $h/internal/version.version=$HELM_VERSION \
  -X $h/pkg/lint/rules.k8sVersionMajor=1 -X $h/pkg/lint/rules.k8sVersionMinor=$KUBE_MINOR \
  -X $h/pkg/chartutil.k8sVersionMajor=1 -X $h/pkg/chartutil.k8sVersionMinor=$KUBE_MINOR" \
  "$h/cmd/helm@$HELM_VERSION"
helm=$work/bin/helm
(cd ../.. && go build -o "$work/fifoq" ./cmd/fifoq)
echo "helm $HELM_VERSION and fifoq built in $((SECONDS - start)) s"

key=(--set auth.accessKeyId=AKIAFIFOQHELMCHECK01 --set auth.secretAccessKey=check-only)
"$helm" lint --strict fifoq "${key[@]}" --set replicas=1
"$helm" lint --strict fifoq "${key[@]}" --set cluster.tls.secretName=fifoq-raft-tls
"$helm" lint --strict fifoq "${key[@]}" --set replicas=5 --set cluster.tls.secretName=fifoq-raft-tls \
  --set tls.secretName=fifoq-tls --set metrics.serviceMonitor.enabled=true

cd check
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt wants to reformat:"; echo "$unformatted"; exit 1
fi
go mod verify
go vet ./...
start=$SECONDS
CHECK_HELM=$helm CHECK_FIFOQ=$work/fifoq go test -count=1 -v ./... 2>&1 \
  | grep -E '^(---|ok|FAIL|PASS|panic)|^ +(---|[a-z_]+_test\.go:)'
echo "chart checks ran in $((SECONDS - start)) s"
