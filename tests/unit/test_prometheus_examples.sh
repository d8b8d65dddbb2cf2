#!/usr/bin/env bash
# test_prometheus_examples.sh — examples/prometheus/ as Prometheus reads it: the scrape config
# (with its rule file) passes `promtool check config`, the alerting rules `promtool check
# rules`, and their unit tests (sop-alerts.test.yml: what fires, what does not) `promtool test
# rules`. promtool comes with Debian's prometheus (scripts/install-deps.sh).
. "$(dirname "$0")/lib.sh"
dir="${SOP_SRC:-$(dirname "$0")/../..}/examples/prometheus"
if ! command -v promtool >/dev/null; then
  bad "promtool not installed (scripts/install-deps.sh installs prometheus)"
  finish; exit 1
fi
cd "$dir" || exit 1
out=$(promtool check config prometheus.yml 2>&1) && ok "promtool check config prometheus.yml" \
  || bad "promtool check config: $out"
out=$(promtool check rules sop-alerts.yml 2>&1) && ok "promtool check rules sop-alerts.yml" \
  || bad "promtool check rules: $out"
out=$(promtool test rules sop-alerts.test.yml 2>&1) && ok "promtool test rules sop-alerts.test.yml" \
  || bad "promtool test rules: $out"
# The rules' unit tests can fail: a wrong expectation is caught.
cp sop-alerts.yml "$tmp/"
sed 's/eval_time: 3m/eval_time: 7m/' sop-alerts.test.yml > "$tmp/t.yml"
promtool test rules "$tmp/t.yml" >/dev/null 2>&1 && bad "a wrong expectation passes promtool test rules" \
  || ok "a wrong expectation fails promtool test rules"
finish
