#!/usr/bin/env bash
# Regenerates the real-kernel fixtures in this directory (run as root; leaves nothing behind).
# The unit tests pin numbers of the committed capture: regenerating means updating them too.
# Topology: s0 --- r --- d0 (three network namespaces); the bottleneck is r's egress towards d0:
# htb 10 Mbit/s + bfifo 60000 bytes, as a forwarding router (a bottleneck on the sender's own
# interface never queues: TCP small queues keep only ~2 packets in a local qdisc).
#   tcp_probe_real.trace  tcp:tcp_probe lines from a private tracefs instance (trace_clock=mono), first 400
#   ss_real.txt           `ss -tin` snapshots taken during the same transfer (to check srtt units)
#   iperf_real.json       iperf3 -J client output (4 s, cubic)
#   qdisc_real.csv        bottleneck samples in the trial-format qdisc.csv layout (every 10 ms)
#   tcptrace_real.txt     `tcptrace -l -n -r` of the sender-side headers-only (-s 128) capture
set -euo pipefail
OUT=$(cd "$(dirname "$0")" && pwd)
NSS=tcpran-s0 NSR=tcpran-r NSD=tcpran-d0 INST=/sys/kernel/tracing/instances/tcprepro-analysis-fixture
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ -d "$INST" ]; then echo 0 > "$INST/events/tcp/tcp_probe/enable" || true; rmdir "$INST" || true; fi
  for ns in $NSS $NSR $NSD; do ip netns del $ns 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

for ns in $NSS $NSR $NSD; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add s0e netns $NSS type veth peer name rin netns $NSR
ip link add rout netns $NSR type veth peer name d0e netns $NSD
ip -n $NSS addr add 10.200.1.1/24 dev s0e; ip -n $NSR addr add 10.200.1.254/24 dev rin
ip -n $NSR addr add 10.200.2.254/24 dev rout; ip -n $NSD addr add 10.200.2.1/24 dev d0e
ip -n $NSS link set s0e up; ip -n $NSR link set rin up; ip -n $NSR link set rout up; ip -n $NSD link set d0e up
ip -n $NSS route add default via 10.200.1.254; ip -n $NSD route add default via 10.200.2.254
ip netns exec $NSR sysctl -qw net.ipv4.ip_forward=1
ip netns exec $NSS ethtool -K s0e tso off gso off >/dev/null
ip netns exec $NSR ethtool -K rin gro off >/dev/null
ip netns exec $NSR tc qdisc add dev rout root handle 1: htb default 1
ip netns exec $NSR tc class add dev rout parent 1: classid 1:1 htb rate 10mbit
ip netns exec $NSR tc qdisc add dev rout parent 1:1 handle 10: bfifo limit 60000

mkdir "$INST"
echo mono > "$INST/trace_clock"
echo 'dport >= 20000 && dport <= 20099' > "$INST/events/tcp/tcp_probe/filter"
echo 1 > "$INST/events/tcp/tcp_probe/enable"

ip netns exec $NSD iperf3 -s -1 -p 20001 >/dev/null 2>&1 & PIDS+=($!)
ip netns exec $NSS tcpdump -i s0e -s 128 -w "$TMP/s0.pcap" 'tcp port 20001' 2>/dev/null & PIDS+=($!)
cat > "$TMP/sampler.py" <<'PY'
import json, subprocess, sys, time
out, dur = sys.argv[1], float(sys.argv[2])
with open(out, "w") as f:
    f.write("t,dev,role,backlog_bytes,backlog_pkts,drops,sent_bytes,sent_pkts,overlimits\n")
    end = time.monotonic() + dur
    nxt = time.monotonic()
    while nxt < end:
        js = json.loads(subprocess.run(["tc", "-s", "-j", "qdisc", "show", "dev", "rout"],
                                       capture_output=True, text=True).stdout)
        t = time.monotonic()
        q = next(q for q in js if q["kind"] == "bfifo")
        f.write(f"{t:.6f},rout,forward,{q['backlog']},{q['qlen']},{q['drops']},{q['bytes']},"
                f"{q['packets']},{q['overlimits']}\n")
        nxt += 0.01
        time.sleep(max(0.0, nxt - time.monotonic()))
PY
sleep 1
ip netns exec $NSR python3 "$TMP/sampler.py" "$OUT/qdisc_real.csv" 5.5 & PIDS+=($!)
( for i in 1 2 3 4 5 6; do sleep 0.6; echo "# t=$(cut -d' ' -f1 /proc/uptime)"; ip netns exec $NSS ss -tin 'dport = :20001'; done ) > "$OUT/ss_real.txt" & PIDS+=($!)
ip netns exec $NSS iperf3 -c 10.200.2.1 -p 20001 -t 4 -i 1 -C cubic -J > "$OUT/iperf_real.json"
sleep 1.5
echo 0 > "$INST/events/tcp/tcp_probe/enable"
# keep the header and the first 400 events (slow start, first losses, steady state): ~120 KB
awk '/^#/ || n++ < 400' "$INST/trace" > "$OUT/tcp_probe_real.trace"
kill "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null || true
tcptrace -l -n -r "$TMP/s0.pcap" > "$OUT/tcptrace_real.txt"
wait
