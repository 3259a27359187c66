#!/usr/bin/env bash
# Reads `go test -bench` output and prints Gantry-vs-raw-expr ratios from the same run
# (median of the -count runs for each benchmark).
set -euo pipefail
out=${1:-.bench.out}
median() { { grep "^Benchmark$1-" "$out" || true; } | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(median RenderCached)
if [ -n "$c" ]; then
awk -v c="$(median RenderCached)" -v r="$(median RawExprCached)" \
    -v s="$(median RenderStepSpec20)" -v rs="$(median RawExprStepSpec20)" 'BEGIN {
  print ""; print "expression rendering (ns/op, median of runs)"
  printf "  cached expression:   gantry %8.0f  raw expr %8.0f  ratio %.2fx  (target <= 2x)\n", c, r, c / r
  printf "  20-expression spec:  gantry %8.0f  raw expr %8.0f  ratio %.2fx  (%.0f ns per expression)\n", s, rs, s / rs, s / 20
}'
fi
metric() { { grep "^Benchmark$1-" "$out" || true; } | awk '{for (i = 1; i <= NF; i++) if ($i == "ms/step") print $(i-1)}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
g=$(metric Gantry100Steps); r=$(metric Raw100Steps)
if [ -n "$g" ] && [ -n "$r" ]; then
  awk -v g="$g" -v r="$r" 'BEGIN {
    print ""; print "100 sequential `exit 0` ShellScript steps on the embedded server (ms per step, median of runs)"
    printf "  gantry pipeline %.2f  hand-written workflow %.2f  ratio %.2fx  (target <= 1.25x and < 20 ms)\n", g, r, g / r
  }'
fi
unit() { { grep "^Benchmark$1-" "$out" || true; } | awk -v u="$2" '{for (i = 1; i <= NF; i++) if ($i == u) print $(i-1)}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
gu=$(unit Gantry100StepsUIPolled ms/step); gub=$(unit Gantry100StepsUIPolled unwatched-ms/step)
gb=$(unit Gantry100StepsWithUI ms/step); gbb=$(unit Gantry100StepsWithUI unwatched-ms/step)
if [ -n "$gu" ] && [ -n "$gub" ]; then
  awk -v u="$gu" -v ub="$gub" -v w="$gb" -v wb="$gbb" 'BEGIN {
    print ""; print "100 steps while someone watches in the Web UI (ms per step, median of runs; baseline: the same pipeline unwatched, runs interleaved)"
    printf "  UI served, its API called as an open execution page calls it: %.2f vs %.2f  ratio %.2fx  (target <= 1.05x)\n", u, ub, u / ub
    if (w != "" && wb != "") printf "  UI served and Chromium on the same two cores following each run: %.2f vs %.2f  ratio %.2fx  (the browser renders on the same cores as the engine)\n", w, wb, w / wb
  }'
fi
gm=$(unit GantryMatrix200 ms/run); rf=$(unit RawFanout200 ms/run); ev=$(unit GantryMatrix200 events/step)
if [ -n "$gm" ] && [ -n "$rf" ]; then
  awk -v g="$gm" -v r="$rf" -v e="$ev" 'BEGIN {
    print ""; print "matrix of 200 `exit 0` steps, maxConcurrency 20 (wall ms per run, median of runs)"
    printf "  gantry %.0f ms  hand-written fan-out %.0f ms  ratio %.2fx  (target <= 1.1x); %.2f history events per step\n", g, r, g / r, e
  }'
fi
bw=$(unit GantryMatrix5000 ms/run); bh=$(unit GantryMatrix5000 max-history-events)
if [ -n "$bw" ]; then
  printf "\nmatrix of 5,000 steps (maxConcurrency 100): %.1f s wall, largest workflow history %s events (Temporal's cap: 51,200)\n" "$(awk -v w="$bw" 'BEGIN { print w / 1000 }')" "$bh"
fi
sl=$(unit Stages5000 ms/stage); sb=$(unit Stages5000 baseline-ms/stage)
if [ -n "$sl" ] && [ -n "$sb" ]; then
  awk -v l="$sl" -v b="$sb" -v e="$(unit Stages5000 max-history-events)" 'BEGIN {
    print ""; print "a pipeline of 5,000 plain stages (25 segments) vs one of 100, run before and after it (ms per stage)"
    printf "  5,000 stages %.1f  100 stages %.1f  ratio %.2fx  (target <= 1.2x); largest workflow history %d events\n", l, b, l / b, e
  }'
fi
ba=$(unit RefuseAliasBomb bomb-alloc-KiB)
if [ -n "$ba" ]; then
  awk -v ba="$ba" -v bp="$(unit RefuseAliasBomb bomb-peak-heap-KiB)" -v pa="$(unit RefuseAliasBomb plain-alloc-KiB)" -v pp="$(unit RefuseAliasBomb plain-peak-heap-KiB)" 'BEGIN {
    print ""; print "refusing a 10-level YAML alias bomb (under 1 KiB, 9^11 nodes with its aliases followed) through the API, vs a small invalid pipeline"
    printf "  allocated %.0f vs %.0f KiB a request, peak heap growth %.0f vs %.0f KiB (the whole test process, its worker included)\n", ba, pa, bp, pp
  }'
fi
rl=$(unit RemoteStart local-ms/start); rw=$(unit RemoteStart warm-ms/start)
if [ -n "$rl" ] && [ -n "$rw" ]; then
  awk -v l="$rl" -v w="$rw" -v h="$(unit RemoteStart git-heads-ms/start)" -v c="$(unit RemoteStart cold-ms/start)" -v wr="$(unit RemoteStart warm-git-requests/start)" -v cr="$(unit RemoteStart cold-git-requests/start)" 'BEGIN {
    print ""; print "starting a pipeline (a stage template in another repository, an input set) through the API (ms per start request, median of runs)"
    printf "  from Git, commit cached %.1f  from a local file %.1f  ratio %.2fx  (target <= 1.1x); %.0f Git requests a start (the branch heads)\n", w, l, w / l, wr
    printf "    of which Git answering for the two branch heads at once %.1f (timed alone beside it); Gantry'"'"'s own share, less that round trip: %.2fx\n", h, (w - h) / l
    printf "  from Git just after a push %.1f  ratio %.2fx; %.0f Git requests a start (one fetch of the new commit, refs and pack)\n", c, c / l, cr
  }'
fi
ls=$(unit LedgerReads services-ms)
if [ -n "$ls" ]; then
  awk -v s="$ls" -v r="$(unit LedgerReads raw-list-ms)" -v d="$(unit LedgerReads dora-ms)" -v q="$(unit LedgerReads raw-queries-ms)" -v p="$(unit LedgerReads services-page-ms)" 'BEGIN {
    print ""; print "the deployments ledger (ms, median of runs)"
    printf "  services list of 500 services %.1f  bare visibility listing of the same workflows %.1f  ratio %.2fx (target <= 300 ms)\n", s, r, s / r
    printf "  the Web UI'"'"'s services page of the same list, a whole GET %.1f  ratio to the bare listing %.2fx (target <= 300 ms)\n", p, p / r
    printf "  DORA over 100,000 recorded deployments (10 targets) %.1f  bare queries of the 10 ledgers %.1f  ratio %.2fx (target <= 1000 ms)\n", d, q, d / q
  }'
fi
is=$(unit InstanceSync sweep-cpu-ms); id=$(unit InstanceSync direct-cpu-ms)
if [ -n "$is" ] && [ -n "$id" ]; then
  awk -v s="$is" -v d="$id" -v i="$(unit InstanceSync idle-cpu-ms/s)" 'BEGIN {
    print ""; print "service instances: one sweep over 1,000 targets (CPU ms of this process, the idle upkeep of " i " ms/s taken off; six sweeps an hour)"
    printf "  the sweep (listing, reads, nothing changed) %.0f  the same 1,000 reads made directly %.0f  ratio %.2fx (target <= 1.2x); per hour %.1f s vs %.1f s\n", s, d, s / d, 6 * s / 1000, 6 * d / 1000
  }'
fi
wd=$(unit WebhookDeliveries deliveries/s); wr=$(unit WebhookDeliveries raw-starts/s)
if [ -n "$wd" ] && [ -n "$wr" ]; then
  awk -v d="$wd" -v r="$wr" -v q="$(unit WebhookDeliveries ratio)" -v p="$(unit WebhookDeliveries p50-ms)" -v rp="$(unit WebhookDeliveries raw-p50-ms)" \
      -v w="$(grep '^BenchmarkWebhookDeliveries-' "$out" | awk '{for (i = 1; i <= NF; i++) if ($i == "worst-p99-ms") print $(i-1)}' | sort -n | tail -1)" \
      -v rw="$(grep '^BenchmarkWebhookDeliveries-' "$out" | awk '{for (i = 1; i <= NF; i++) if ($i == "raw-worst-p99-ms") print $(i-1)}' | sort -n | tail -1)" 'BEGIN {
    print ""; print "webhook bursts, 8 clients, 200 starts a burst (median of rounds; rounds alternate): signed GitHub deliveries vs raw StartWorkflowExecution of the same pipeline"
    printf "  deliveries %.0f/s  raw starts %.0f/s  ratio %.2fx (target >= 0.8x); p50 %.1f vs %.1f ms; worst p99 of any round %.1f ms (target < 150) vs %.1f ms\n", d, r, q, p, rp, w, rw
  }'
fi
for topo in Embedded Topology; do
  sr=$(unit "Scale$topo" starts/s)
  [ -n "$sr" ] || continue
  awk -v t="$topo" -v s="$sr" -v w="$(unit "Scale$topo" s-until-all-wait)" -v m="$(unit "Scale$topo" KiB-per-waiting-run)" \
      -v a="$(unit "Scale$topo" s-to-approve-all)" -v d="$(unit "Scale$topo" s-until-all-succeeded)" 'BEGIN {
    if (t == "Embedded") { print ""; print "executions waiting for an approval at once, started and approved through the HTTP API (8 clients)" }
    printf "  %-9s started %.0f/s, all waiting after %.1f s, %.0f KiB per waiting execution, all approved in %.1f s, all succeeded after %.1f s\n", t, s, w, m, a, d
  }'
done
for topo in Embedded Topology; do
  ga=$(unit "Approvals$topo" approvals/s)
  [ -n "$ga" ] || continue
  a() { unit "Approvals$topo" "$1"; }
  awk -v t="$topo" -v g="$ga" -v r="$(a raw-approvals/s)" -v sg="$(a staged-approvals/s)" -v p="$(a approval-p99-ms)" -v rp="$(a raw-approval-p99-ms)" -v sp="$(a staged-approval-p99-ms)" \
      -v c="$(a cpu-ms/approval)" -v rc="$(a raw-cpu-ms/approval)" -v sc="$(a staged-cpu-ms/approval)" \
      -v s="$(a starts/s)" -v rs="$(a raw-starts/s)" -v d="$(a s-until-all-succeeded)" -v rd="$(a raw-s-until-all-succeeded)" -v sd="$(a staged-s-until-all-succeeded)" 'BEGIN {
    if (t == "Embedded") { print ""; print "approvals: executions waiting for one approval each, started and approved through an HTTP API from 8 clients, same server (baselines: raw, a hand-written workflow that waits for one update; staged, the same wait in a child workflow, as a stage is)" }
    printf "  %-9s %.0f approvals/s vs raw %.0f: %.2fx (target <= 1.5x); vs staged %.0f: %.2fx; p99 %.0f vs %.0f / %.0f ms; CPU per approval %.1f vs %.1f / %.1f ms\n", t, g, r, r / g, sg, (sg > 0 ? sg / g : 0), p, rp, sp, c, rc, sc
    printf "  %-9s starts %.0f/s vs raw %.0f/s; all succeeded after %.1f vs %.1f / %.1f s\n", "", s, rs, d, rd, sd
  }'
done
pp=$(unit OnRunPrepared µs/eval); pn=$(unit OnRunNewPipeline µs/eval); pu=$(unit OnRunUnprepared µs/eval)
if [ -n "$pp" ] && [ -n "$pn" ] && [ -n "$pu" ]; then
  awk -v p="$pp" -v n="$pn" -v u="$pu" 'BEGIN {
    print ""; print "on-run policy evaluation, starter library (8 policies) against a 20-stage pipeline (µs per evaluation, median)"
    printf "  a pipeline decided before %.0f µs  a new pipeline %.0f µs  (target < 1000)  queries prepared per evaluation %.0f µs  ratios %.1fx %.1fx\n", p, n, u, u / p, u / n
  }'
fi
te=$(unit Expand200 ms/expand); tl=$(unit LoadTemplated200 ms/load); ti=$(unit LoadInline200 ms/load)
if [ -n "$te" ] && [ -n "$tl" ] && [ -n "$ti" ]; then
  awk -v e="$te" -v l="$tl" -v i="$ti" 'BEGIN {
    print ""; print "200 stages linking 5 stage templates (ms, median of runs)"
    printf "  expansion alone %.1f ms (target well under 50 ms)\n", e
    printf "  load for a run: templated %.1f  written out in full %.1f  ratio %.2fx  (target < 2x)\n", l, i, l / i
  }'
fi
kg=$(unit RollingDeploy10 ms/deploy); kk=$(unit Kubectl10 ms/deploy)
if [ -n "$kg" ] && [ -n "$kk" ]; then
  awk -v g="$kg" -v k="$kk" 'BEGIN {
    print ""; print "rolling deploy of 10 Deployments (2 replicas, new image each time), step start to steady state (ms, median of runs)"
    printf "  gantry K8sRollingDeploy %.0f  kubectl apply + rollout status %.0f  ratio %.2fx\n", g, k, g / k
  }'
fi
tg=$(unit TerraformApply20 ms/apply); th=$(unit TofuByHand20 ms/apply)
if [ -n "$tg" ] && [ -n "$th" ]; then
  awk -v g="$tg" -v h="$th" 'BEGIN {
    print ""; print "apply of 20 terraform_data resources into a fresh state (ms, median of runs)"
    printf "  gantry pipeline with TerraformApply %.0f  the same tofu by hand (init, plan, apply, output) %.0f  ratio %.2fx\n", g, h, g / h
  }'
fi
sg=$(unit SshDeploy3Hosts ms/deploy); sh=$(unit SshByHand3Hosts ms/deploy)
if [ -n "$sg" ] && [ -n "$sh" ]; then
  awk -v g="$sg" -v h="$sh" 'BEGIN {
    print ""; print "a 4 MiB package copied to 3 sshd hosts at once and checked there (ms, median of runs)"
    printf "  gantry pipeline with a Command step (Copy, Script) %.0f  curl + ssh/scp/ssh per host by hand %.0f  ratio %.2fx\n", g, h, g / h
  }'
fi
hg=$(unit HelmDeploy10 ms/deploy); hc=$(unit HelmCLI10 ms/deploy)
if [ -n "$hg" ] && [ -n "$hc" ]; then
  awk -v g="$hg" -v c="$hc" 'BEGIN {
    print ""; print "Helm release of a chart of 10 Deployments (2 replicas, new image each time), to ready (ms, median of runs)"
    printf "  gantry HelmDeploy %.0f  helm upgrade --install --wait %.0f  ratio %.2fx (target <= 1.1)\n", g, c, g / c
  }'
fi
bg=$(unit HelmBlueGreen ms/deploy); bc=$(unit HelmCLIBlueGreen ms/deploy)
if [ -n "$bg" ] && [ -n "$bc" ]; then
  awk -v g="$bg" -v c="$bc" 'BEGIN {
    print ""; print "Helm blue-green of a chart of one Deployment (4 replicas, new image into the other colour each time), deploy and swap (ms, median of runs)"
    printf "  gantry HelmBGDeploy + HelmBlueGreenSwapStep %.0f  by hand: kubectl get, helm upgrade --install --wait, kubectl apply, kubectl patch x2 %.0f  ratio %.2fx (target <= 1.1)\n", g, c, g / c
  }'
fi
ag=$(unit AsgRolling ms/deploy); ad=$(unit AsgRollingDirect ms/deploy)
if [ -n "$ag" ] && [ -n "$ad" ]; then
  awk -v g="$ag" -v d="$ad" 'BEGIN {
    print ""; print "ASG rolling deployment of a new image against the AWS fake: launch template version, group update, policy, instance refresh, steady state (ms, median of runs)"
    printf "  gantry AsgRollingDeploy %.1f  the same calls made directly %.1f  ratio %.2fx (target <= 1.1)\n", g, d, g / d
  }'
fi
cf=$(unit ContainerGroup first-ms); kf=$(unit KubectlRunExec first-ms); cs=$(unit ContainerGroup step-ms); ks=$(unit KubectlRunExec step-ms)
if [ -n "$cf" ] && [ -n "$kf" ]; then
  awk -v cf="$cf" -v kf="$kf" -v cs="$cs" -v ks="$ks" 'BEGIN {
    print ""; print "containerized step group on a real node, busybox image (ms, median of runs)"
    printf "  group start to its first command run %.0f  kubectl run until the pod succeeded %.0f  ratio %.2fx (target <= 1.2)\n", cf, kf, cf / kf
    printf "  each further step %.1f  kubectl exec %.1f  ratio %.2fx (target <= 1.2)\n", cs, ks, cs / ks
  }'
fi
pl=$(grep -h '^BenchmarkPendingList-' "$out" 2>/dev/null | tail -1 || true)
if [ -n "$pl" ]; then
  echo "$pl" | awk '{
    print ""; print "every waiting decision listed, pages of 100 executions from visibility, the waiting steps from the memo of each record (ms per full listing; baseline: the same visibility pages bare)"
    for (i = 1; i <= NF; i++) if ($i ~ /^list[0-9]+-ms$/) { n = substr($i, 5); sub(/-ms$/, "", n); l[n] = $(i-1) } else if ($i ~ /^raw[0-9]+-ms$/) { n = substr($i, 4); sub(/-ms$/, "", n); r[n] = $(i-1) }
    for (n in l) printf "  %6d waiting: gantry %.0f ms (%.2f ms per execution)  bare visibility %.0f ms\n", n, l[n], l[n] / n, r[n]
  }'
fi
ci=$(unit CIStage5Runs stage-ms); hp=$(unit HandPod5Containers stage-ms); hi=$(unit HandPod5InitContainers stage-ms)
if [ -n "$ci" ] && [ -n "$hp" ]; then
  awk -v c="$ci" -v p="$hp" -v i="$hi" 'BEGIN {
    print ""; print "CI stage of 5 Run steps (`true`, busybox) on a real node vs the same 5 containers in one hand-written pod, created to Succeeded and deleted (ms, median of runs)"
    printf "  CI stage %.0f  pod of 5 containers side by side %.0f  ratio %.2fx (target <= 1.2)", c, p, c / p
    if (i != "") printf ";  as init containers in order %.0f  ratio %.2fx", i, c / i
    print ""
  }'
fi
bp=$(unit BuildAndPush build-ms); bd=$(unit BuildDirect build-ms)
if [ -n "$bp" ] && [ -n "$bd" ]; then
  awk -v g="$bp" -v d="$bd" 'BEGIN {
    print ""; print "Dockerfile (FROM busybox, one RUN line) built cold with BuildKit in a pod on the node and pushed to the loopback registry (ms, median of runs)"
    printf "  BuildAndPushDockerRegistry step %.0f  buildkitd + buildctl driven by kubectl exec %.0f  ratio %.2fx (target <= 1.1)\n", g, d, g / d
  }'
fi
cc=$(unit CacheRestore cold-ms); ch=$(unit CacheRestore cached-ms)
if [ -n "$cc" ] && [ -n "$ch" ]; then
  awk -v c="$cc" -v h="$ch" 'BEGIN {
    print ""; print "CI stage restoring 2,000 dependency files from S3 (versitygw) before an install that runs only without them (ms, median of runs)"
    printf "  cached %.0f  cold %.0f  ratio %.2fx\n", h, c, h / c
  }'
fi
fc=$(unit FetchCached ms/fetch); fa=$(unit RefAdvertisement ms/fetch); fp=$(unit FetchCachedCommit ms/fetch); fo=$(unit FetchCold ms/fetch)
if [ -n "$fc" ] && [ -n "$fa" ]; then
  awk -v c="$fc" -v a="$fa" -v p="$fp" -v o="$fo" 'BEGIN {
    print ""; print "manifests from a local Git server (git http-backend, 21 files; ms per fetch, median of runs)"
    printf "  second deploy of a branch (cache hit) %.1f  vs the server answering its ref advertisement alone %.1f  ratio %.2fx (target < 20 ms)\n", c, a, c / a
    printf "  second deploy of a named commit (rerun, rollback) %.2f  first fetch (shallow clone) %.1f\n", p, o
  }'
fi
ts=$(unit ThroughputTopology started/s); tc=$(unit ThroughputTopology completed/s)
es=$(unit ThroughputEmbedded started/s); ec=$(unit ThroughputEmbedded completed/s)
if [ -n "$ts" ] && [ -n "$es" ]; then
  awk -v ts="$ts" -v tc="$tc" -v es="$es" -v ec="$ec" \
      -v t50="$(unit ThroughputTopology step-p50-ms)" -v t99="$(unit ThroughputTopology step-p99-ms)" \
      -v e50="$(unit ThroughputEmbedded step-p50-ms)" -v e99="$(unit ThroughputEmbedded step-p99-ms)" 'BEGIN {
    print ""; print "200 concurrent 3-step pipelines (median of runs): topology = PostgreSQL + gantry temporal + 2 worker processes; embedded = SQLite, 1 in-process worker"
    printf "  started/s    topology %6.1f  embedded %6.1f  ratio %.2fx\n", ts, es, ts / es
    printf "  completed/s  topology %6.1f  embedded %6.1f  ratio %.2fx\n", tc, ec, tc / ec
    printf "  per-step latency ms  topology p50 %.1f p99 %.1f  embedded p50 %.1f p99 %.1f\n", t50, t99, e50, e99
  }'
fi
ll=$(unit LogsToS3 local-ms/step); ls3=$(unit LogsToS3 s3-ms/step)
if [ -n "$ll" ] && [ -n "$ls3" ]; then
  awk -v l="$ll" -v s="$ls3" 'BEGIN {
    print ""; print "100 sequential steps that each print a line (ms per step, median of runs; runs alternate): logs on disk vs also shipped to S3 (versitygw on the same machine)"
    printf "  shipped to S3 %.3f  on disk %.3f  ratio %.2fx (target <= 1.05)\n", s, l, s / l
  }'
fi
rw=$(unit APIRoles ms/call-roles); rn=$(unit APIRoles ms/call-no-roles)
if [ -n "$rw" ] && [ -n "$rn" ]; then
  awk -v w="$rw" -v n="$rn" 'BEGIN {
    print ""; print "an API call (an execution'"'"'s tree) by one of 1,000 users (ms, median of calls; calls alternate): identity file with 50 roles vs the same users without roles"
    printf "  with roles %.2f  without %.2f  ratio %.2fx (authorization: the file hashed, the execution'"'"'s pipeline remembered, the roles matched)\n", w, n, w / n
  }'
fi
np=$(unit Notifications plain-ms); nn=$(unit Notifications notified-ms); nd=$(unit Notifications all-delivered-ms)
if [ -n "$np" ] && [ -n "$nn" ]; then
  awk -v p="$np" -v n="$nn" -v d="$nd" 'BEGIN {
    print ""; print "20-step pipeline (ms, median of runs; runs alternate): with a rule selecting every event (5 webhook deliveries) vs without rules"
    printf "  with notifications %.1f  without %.1f  ratio %.2fx (+%.1f ms: the events handed over, and one round trip at the close); all 5 delivered %.1f ms after the start\n", n, p, n / p, n - p, d
  }'
fi
peer=$(unit DroneExec ms/step-marginal)
if [ -n "$peer" ]; then
  echo; echo "marginal cost per step, (T100 - T20) / 80, of sequential \`true\` ShellScript steps (ms; runs of 20 and 100 steps alternate, median of the pairs, median of the -count runs)"
  printf "  drone-runner-exec (no durability, /bin/sh)  %.3f  (on its own, after the gantry runs)\n" "$peer"
  for shell in Sh Bash; do
    for mode in fast-path regular; do
      g=$(unit "ShortSteps/$shell/$mode" ms/step-marginal)
      [ -n "$g" ] || continue
      # Issue 27's targets: Sh on the fast path at most 0.8x the peer, Bash at most 1.0x.
      target=1.0; [ "$shell/$mode" = Sh/fast-path ] && target=0.8
      # Fast-path runs alternate with the peer's when make bench names it (GANTRY_DRONE_BIN):
      # that ratio is the one the target is about.
      x=$(unit "ShortSteps/$shell/$mode" x-peer); pi=$(unit "ShortSteps/$shell/$mode" peer-ms/step-marginal)
      awk -v g="$g" -v p="$peer" -v s="$shell" -v m="$mode" -v t="$target" -v x="$x" -v pi="$pi" 'BEGIN {
        if (x != "") printf "  gantry %-4s %-9s                     %.3f  peer in the same minutes %.3f  gantry/peer %.2f  (target <= %s)\n", s, m, g, pi, x, t
        else printf "  gantry %-4s %-9s                     %.3f  gantry/peer %.2f  (target <= %s)\n", s, m, g, g / p, t }'
    done
  done
fi
mg=$(unit MachineSteps ms/step-marginal); mx=$(unit MachineSteps x-peer); mp=$(unit MachineSteps peer-ms/step-marginal)
if [ -n "$mg" ] && [ -n "$mx" ]; then
  awk -v g="$mg" -v x="$mx" -v p="$mp" 'BEGIN {
    print ""; print "build machine: marginal cost per step, (T100 - T20) / 80, of sequential `true` Run steps without an image in a runtime: Cloud stage (ms; runs alternate with drone-runner-exec'"'"'s of the same steps)"
    printf "  gantry on its own build machine %.3f  drone-runner-exec %.3f  gantry/peer %.2f  (target <= 1.0)\n", g, p, x
  }'
fi
cg=$(unit MachineContainers5 ms/run); ch=$(unit MachineContainers5 hand-ms/run); cx=$(unit MachineContainers5 x-hand)
if [ -n "$cg" ] && [ -n "$ch" ]; then
  awk -v g="$cg" -v h="$ch" -v x="$cx" 'BEGIN {
    print ""; print "build machine with containerd: a runtime: Docker stage of 5 `true` Run steps that name an image, start to result (ms; baseline: the same 5 containers in one CNI network namespace, created, started, waited for and removed by hand through containerd'"'"'s Go client, in the same minutes)"
    printf "  gantry %.0f  by hand %.0f  gantry/hand %.2f  (target <= 1.2)\n", g, h, x
  }'
fi
lh=$(unit LockHandoff handoff-ms); ls=$(unit LockHandoff sequential-ms)
if [ -n "$lh" ] && [ -n "$ls" ]; then
  awk -v h="$lh" -v s="$ls" 'BEGIN {
    print ""; print "locks: 20 executions queued on one key (median of the gaps between one ending and the next starting; baseline: a client starting each run when the previous result is in)"
    printf "  handoff %.1f ms  sequential starts %.1f ms  ratio %.2fx\n", h, s, h / s
  }'
fi
# constraint BENCH TITLE NOTE: a Deployment stage with its resource constraint against the same stage
# with allowSimultaneousDeployments, runs interleaved.
constraint() {
  local c u
  c=$(unit "$1" ms/run); u=$(unit "$1" unconstrained-ms/run)
  [ -n "$c" ] && [ -n "$u" ] || return 0
  awk -v c="$c" -v u="$u" -v t="$2" -v note="$3" 'BEGIN {
    print ""; print t " (ms per run, median; baseline: the same stage with allowSimultaneousDeployments)"
    printf "  with its resource constraint %.1f  without %.1f  ratio %.2fx  (%s)\n", c, u, c / u, note
  }'
  # Each -count run pairs the two interleaved: the spread of their ratios shows the noise.
  grep "^Benchmark$1-" "$out" | awk '{for (i = 1; i <= NF; i++) { if ($i == "ms/run") c = $(i-1); if ($i == "unconstrained-ms/run") u = $(i-1) }
    r = c / u; if (n == 0 || r < lo) lo = r; if (n == 0 || r > hi) hi = r; n++ }
    END { if (n > 1) printf "  ratios of the %d runs %.2f-%.2fx\n", n, lo, hi }'
}
constraint DeploymentConstraintRollout "a Deployment stage that deploys: a Kubernetes rolling deployment of a new tag, run after run" "target <= 1.05x"
constraint DeploymentConstraint "a Deployment stage of one echo step, run after run: the constraint's fixed cost" "reported: one round trip to the lock"
pg=$(unit ExecutionPage200 ms-to-draw-210); pt=$(unit ExecutionPage200 temporal-ui-ms)
if [ -n "$pg" ] && [ -n "$pt" ]; then
  awk -v g="$pg" -v t="$pt" 'BEGIN {
    print ""; print "the execution page in headless Chromium, a run of 10 stages of 20 steps (ms from navigation to drawn, median; baseline: the Temporal UI'"'"'s page of the same run showing its status, the pages alternating)"
    printf "  gantry page %.0f  Temporal UI page %.0f  ratio %.2fx\n", g, t, g / t
  }'
fi
vc=$(unit ExecutionPageViewers cpu-ms/viewer-minute); vr=$(unit ExecutionPageViewers tree-reads/minute)
if [ -n "$vc" ]; then
  awk -v c="$vc" -v r="$vr" 'BEGIN {
    print ""; print "the execution page'"'"'s server cost while a run is live: 20 viewers polling its tree every second for 15 s (baseline: the same window without viewers)"
    printf "  %.1f ms of CPU per viewer and minute; %.0f tree reads a minute for all 20 (shared reads)\n", c, r
  }'
fi
vq=$(unit Verify100 queries)
if [ -n "$vq" ]; then
  awk -v q="$vq" -v e="$(unit Verify100 expected-queries)" -v c="$(unit Verify100 cpu-ms-per-metric-minute)" -v w="$(unit Verify100 baseline-cpu-ms/run)" 'BEGIN {
    print ""; print "100 Verify steps at once (Rolling, one metric, one minute) against one Prometheus"
    printf "  range queries served %.0f for %.0f asked (none lost or doubled: equal); %.2f CPU ms per metric-minute beyond the same runs with a Wait step (%.1f CPU ms per run)\n", q, e, c, w
  }'
fi
tr=$(unit TicketWait1000 reads/min)
if [ -n "$tr" ]; then
  awk -v r="$tr" -v m="$(unit TicketWait1000 KiB/waiting)" -v b="$(unit TicketWait1000 KiB/timer-waiting)" -v x="$(unit TicketWait1000 x-memory-vs-timer)" -v s="$(unit TicketWait1000 s-slowest-to-continue)" -v md="$(unit TicketWait1000 s-median-to-continue)" -v sn="$(unit TicketWait1000 s-slowest-to-see)" -v fr="$(unit TicketWait1000 s-slowest-first-read)" -v rc="$(unit TicketWait1000 s-slowest-from-read)" 'BEGIN {
    print ""; print "1,000 executions waiting on Jira issues read every 30 s (baseline: 1,000 waiting on a timer)"
    printf "  %.0f reads a minute (2,000 asked); %.0f KiB per waiting execution vs %.0f KiB (%.2fx); after all 1,000 issues were approved at once, every wait saw it within %.0f s (target: within 30 s), half the executions went on within %.0f s, the slowest in %.1f s\n", r, m, b, x, sn, md, s
    if (fr != "") printf "  polling splits that: the first read after the approval came within %.1f s (one interval, 30 s, plus how late that read was), and the slowest execution went on %.1f s after it\n", fr, rc
  }'
fi
