// wlan_dcf.cc -- ns-3 (Debian libns3-dev 3.37) model of the testbed of
//   F. Vacirca, F. Cuomo, "Experimental results on the support of TCP over 802.11b: an insight
//   into fairness issues", WONS 2006.
//
// Topology:  host A --[CSMA 100 Mbit/s, 0.1 ms]-- AP ))) 802.11b BSS with N+M stations.
//   The paper's AP is a Linux bridge.  In ns-3 a BridgeNetDevice hands frames straight to the
//   wifi device and bypasses the traffic-control layer, so no queue disc would ever see the
//   downlink packets.  Here the AP is therefore an IPv4 ROUTER between the wired subnet
//   10.0.0.0/24 and the wireless subnet 10.1.0.0/24: every downlink packet is forwarded through
//   the queue disc installed on the AP's wifi device -- the place where the paper's Linux qdisc
//   (pfifo of Q packets, or its DATA/ACK scheduler) sat.  Routing adds no delay in ns-3.
//
// Build (see README.md):
//   g++ -O2 -std=c++17 wlan_dcf.cc -o wlan_dcf -lns3-wifi -lns3-csma -lns3-bridge -lns3-internet \
//       -lns3-applications -lns3-mobility -lns3-traffic-control -lns3-network -lns3-core
//       (add -I/usr/include if needed; headers are /usr/include/ns3/*.h)
// Run:
//   ./wlan_dcf --down=1 --up=1 --maxTxAttempts=1 --apQueue=100 --sched=fifo --out=DIR
//
// ---------------------------------------------------------------------------------------------
// OUTPUT  DIR/wlan.json : one JSON object; all values are scalars except "flows" (a list of flat
// objects).  "window" = [warmup, duration) seconds of simulated time; unless the key says
// otherwise every counter below covers the window only.
//   parameters as run: down, up, maxTxAttempts, apQueue, sched, dataWeight, ackWeight,
//     queueSplit, tcp, duration_s, warmup_s, window_s, run, seed, macQueue, staQueue, ackQueue
//     (the Q2 limit in packets; 0 for fifo and queueSplit shared), hostQueue,
//     minRto_s, delAckTimeout_s, trafficStart_s, startJitter_s, ns3_version, tcp_segment_bytes
//     (TCP payload bytes per segment: goodput packets are rx_bytes / this), ns3_max_ssrc (= MaxSsrc = MaxSlrc
//     set on every WifiRemoteStationManager at trafficStart), assoc_max_ssrc (the limit used
//     before trafficStart, while stations associate), mac_queue_max_delay_s, station_radius_m,
//     aifsn (the DCF's AIFSN from trafficStart on; before it, while stations associate, 2),
//     stations_associated (number of STAs associated when traffic started),
//     last_assoc_time_s, wall_clock_s (Simulator::Run wall time)
//   --frameErrorRate > 0 only: frame_error_rate (as run), phy_rx_full_frames (full-size frames
//     the PHYs received in the window), phy_rx_full_frames_channel_lost (of those, lost to the
//     channel error model), phy_rx_frames_channel_lost (frames of any size lost to it)
//   flows[]: id, direction "down"|"up", station (1..N+M), src, dst (IPv4), port, start_s,
//     rx_bytes (bytes delivered in order to the PacketSink in the window),
//     goodput_pkts_s = rx_bytes / 1448 / window_s, goodput_kbps = rx_bytes * 8 / 1000 / window_s,
//     data_sent (TCP segments with payload > 0 handed to IP by the sender in the window,
//       from TcpSocketBase "Tx"), data_retx (those whose sequence number is below the highest
//       sequence number the sender had already sent = retransmissions), loss_prob =
//       data_retx / data_sent (null if data_sent = 0) -- the paper's loss probability
//       "estimated exploiting TCP packet retransmissions",
//     rto_events (sender entered CA_LOSS, i.e. retransmission timeouts), recovery_events
//       (sender entered CA_RECOVERY, i.e. fast retransmit)
//   per direction d in {down, up}: d_rx_bytes, d_goodput_pkts_s, d_goodput_kbps, d_data_sent,
//     d_data_retx, d_loss_prob; total_goodput_pkts_s, total_goodput_kbps,
//     ratio_down_up (down/up goodput; null if up = 0)
//   AP queue disc (on the AP's wifi device), from the QueueDisc traces (any sched):
//     ap_qdisc_{enq,deq,drop}_{data,ack,other}
//   stations' queue discs (sum over stations): sta_qdisc_drop_{data,ack,other}
//   per internal queue (fifo: q1 = the single FIFO, q2 all zero; dataack/adaptive: Q1 = DATA
//     and non-TCP, Q2 = pure ACKs), from the queue disc's own counters:
//     ap_q1_{enq,deq,drop}_{data,ack,other}, ap_q2_{enq,deq,drop}_{data,ack,other}
//   adaptive only: adapt_final_data_weight, adapt_final_ack_weight, adapt_mean_n_down,
//     adapt_mean_n_up (means over the recomputations in the window), adapt_weight_changes
//   MAC, for x = ap (the AP) and x = sta (sum over all stations):
//     mac_x_tx_failed (MacTxDataFailed: data transmission attempts without ACK),
//     mac_x_final_failed (MacTxFinalDataFailed: MPDUs given up after M_t attempts),
//     mac_x_retry_drops, mac_x_retry_drops_data, mac_x_retry_drops_ack (WifiMac "DroppedMpdu"
//       with reason REACHED_RETRY_LIMIT, split by the TCP content of the MSDU),
//     mac_x_enqueue_drops (DroppedMpdu FAILED_ENQUEUE + WifiMac "MacTxDrop"),
//     mac_x_expired_drops (DroppedMpdu EXPIRED_LIFETIME; must be 0),
//     mac_x_acked (WifiMac "AckedMpdu"),
//     phy_x_tx_data (unicast data frames), phy_x_tx_group_data (broadcast/multicast data frames,
//       sent at a basic rate and never acknowledged: ARP requests), phy_x_tx_ack, phy_x_tx_rts,
//       phy_x_tx_cts (frames put on the air by type),
//     phy_x_data_modes (of unicast data frames), phy_x_ack_modes (e.g. "DsssRate11Mbps:1234"),
//     phy_x_long_preamble, phy_x_short_preamble (frames by PLCP preamble)
//   run_final_failed (not windowed: MacTxFinalDataFailed + MacTxFinalRtsFailed on every wifi device
//     over the whole run, association included). Every retry decision ns-3 3.37 makes
//     (WifiRemoteStationManager::NeedRetransmission, the only reader of MaxSsrc/MaxSlrc) that says
//     "give up" is followed by one of those two traces, so 0 means every decision of the run was
//     "retransmit": the same run under a larger M_t takes the same decisions and is this run
//     (sim/wlan/README.md, "Runs proven equal").
//   mac_tx_failed_prob = (ap+sta tx_failed) / (ap+sta tx_data frames): collision probability seen
//     by unicast data frames
// ---------------------------------------------------------------------------------------------

#include "wlan_dataack_queue_disc.h"

#include "ns3/arp-cache.h"
#include "ns3/boolean.h"
#include "ns3/bulk-send-application.h"
#include "ns3/bulk-send-helper.h"
#include "ns3/command-line.h"
#include "ns3/config.h"
#include "ns3/csma-helper.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/error-model.h"
#include "ns3/fifo-queue-disc.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-global-routing-helper.h"
#include "ns3/ipv4-interface-container.h"
#include "ns3/llc-snap-header.h"
#include "ns3/net-device-queue-interface.h"
#include "ns3/object-factory.h"
#include "ns3/mobility-helper.h"
#include "ns3/packet-sink-helper.h"
#include "ns3/packet-sink.h"
#include "ns3/phy-entity.h"
#include "ns3/position-allocator.h"
#include "ns3/random-variable-stream.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/scheduler.h"
#include "ns3/simulator.h"
#include "ns3/ssid.h"
#include "ns3/sta-wifi-mac.h"
#include "ns3/string.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/tcp-socket-state.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/txop.h"
#include "ns3/uinteger.h"
#include "ns3/version-defines.h"
#include "ns3/wifi-helper.h"
#include "ns3/wifi-mac-header.h"
#include "ns3/wifi-mac-helper.h"
#include "ns3/wifi-mac-queue.h"
#include "ns3/wifi-mac.h"
#include "ns3/wifi-mpdu.h"
#include "ns3/wifi-net-device.h"
#include "ns3/wifi-phy.h"
#include "ns3/wifi-remote-station-manager.h"
#include "ns3/wifi-tx-vector.h"
#include "ns3/yans-wifi-helper.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(WlanDataAckQueueDisc);

namespace
{

// ------------------------------------------------------------------ metric window
double g_winStart = 0;
double g_winEnd = 0;

bool
InWindow()
{
    double t = Simulator::Now().GetSeconds();
    return t >= g_winStart && t < g_winEnd;
}

// ------------------------------------------------------------------ per-flow statistics
struct FlowStats
{
    int id = 0;
    std::string dir;
    int station = 0;
    std::string src, dst;
    uint16_t port = 0;
    double start = 0;
    uint64_t rxBytes = 0;
    uint64_t dataSent = 0;
    uint64_t dataRetx = 0;
    uint64_t rtoEvents = 0;
    uint64_t recoveryEvents = 0;
    bool anyTx = false;
    SequenceNumber32 highTx{0}; // highest sequence number end ever sent (whole run)
};

void
OnSinkRx(FlowStats* f, Ptr<const Packet> p, const Address&)
{
    if (InWindow())
    {
        f->rxBytes += p->GetSize();
    }
}

// TcpSocketBase "Tx": (payload packet without TCP header, header, socket); called for every
// segment handed to IP.  A DATA segment is a retransmission if it starts below the highest
// sequence number sent so far (go-back-N after a timeout included).
void
OnTcpTx(FlowStats* f, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    uint32_t len = p->GetSize();
    if (len == 0)
    {
        return;
    }
    SequenceNumber32 seq = h.GetSequenceNumber();
    SequenceNumber32 end = seq + SequenceNumber32(len);
    bool retx = f->anyTx && seq < f->highTx;
    if (!f->anyTx || end > f->highTx)
    {
        f->highTx = end;
        f->anyTx = true;
    }
    if (InWindow())
    {
        f->dataSent++;
        if (retx)
        {
            f->dataRetx++;
        }
    }
}

void
OnCongState(FlowStats* f, TcpSocketState::TcpCongState_t oldV, TcpSocketState::TcpCongState_t newV)
{
    if (!InWindow() || oldV == newV)
    {
        return;
    }
    if (newV == TcpSocketState::CA_LOSS)
    {
        f->rtoEvents++;
    }
    else if (newV == TcpSocketState::CA_RECOVERY)
    {
        f->recoveryEvents++;
    }
}

void
HookSender(Ptr<BulkSendApplication> app, FlowStats* f)
{
    Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
    NS_ABORT_MSG_IF(!s, "BulkSend socket is not a TcpSocketBase");
    s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnTcpTx, f));
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, f));
}

// ------------------------------------------------------------------ MAC / PHY counters
struct MacCounters
{
    uint64_t txFailed = 0, finalFailed = 0;
    uint64_t retryDrops = 0, retryDropsData = 0, retryDropsAck = 0;
    uint64_t enqueueDrops = 0, expiredDrops = 0, acked = 0;
    uint64_t phyData = 0, phyGroupData = 0, phyAck = 0, phyRts = 0, phyCts = 0, longPre = 0, shortPre = 0;
    std::map<std::string, uint64_t> dataModes, ackModes;
};

MacCounters g_macAp;
MacCounters g_macSta;

PktClass
ClassifyMsdu(Ptr<const Packet> msdu)
{
    Ptr<Packet> p = msdu->Copy();
    LlcSnapHeader llc;
    if (p->GetSize() < llc.GetSerializedSize())
    {
        return PKT_OTHER;
    }
    p->RemoveHeader(llc);
    if (llc.GetType() != 0x0800)
    {
        return PKT_OTHER;
    }
    Ipv4Header ip;
    p->RemoveHeader(ip);
    if (ip.GetProtocol() != 6)
    {
        return PKT_OTHER;
    }
    TcpHeader tcp;
    p->PeekHeader(tcp);
    return p->GetSize() > tcp.GetSerializedSize() ? PKT_DATA : PKT_ACK;
}

void
OnTxDataFailed(MacCounters* c, Mac48Address)
{
    if (InWindow())
    {
        c->txFailed++;
    }
}

uint64_t g_runFinalFailed = 0;   // every give-up of the run, windowed or not (run_final_failed)

void
OnRunFinalFailed(Mac48Address)
{
    g_runFinalFailed++;
}

void
OnFinalDataFailed(MacCounters* c, Mac48Address)
{
    if (InWindow())
    {
        c->finalFailed++;
    }
}

void
OnMacDropped(MacCounters* c, WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
{
    if (!InWindow())
    {
        return;
    }
    switch (reason)
    {
    case WIFI_MAC_DROP_REACHED_RETRY_LIMIT: {
        c->retryDrops++;
        if (mpdu->GetHeader().IsData())
        {
            PktClass k = ClassifyMsdu(mpdu->GetPacket());
            if (k == PKT_DATA)
            {
                c->retryDropsData++;
            }
            else if (k == PKT_ACK)
            {
                c->retryDropsAck++;
            }
        }
        break;
    }
    case WIFI_MAC_DROP_FAILED_ENQUEUE:
        c->enqueueDrops++;
        break;
    case WIFI_MAC_DROP_EXPIRED_LIFETIME:
        c->expiredDrops++;
        break;
    default:
        break;
    }
}

void
OnMacTxDrop(MacCounters* c, Ptr<const Packet>)
{
    if (InWindow())
    {
        c->enqueueDrops++;
    }
}

void
OnMacAcked(MacCounters* c, Ptr<const WifiMpdu>)
{
    if (InWindow())
    {
        c->acked++;
    }
}

void
OnSnifferTx(MacCounters* c,
            Ptr<const Packet> p,
            uint16_t,
            WifiTxVector txv,
            MpduInfo,
            uint16_t)
{
    if (!InWindow())
    {
        return;
    }
    WifiMacHeader h;
    p->PeekHeader(h);
    std::string mode = txv.GetMode().GetUniqueName();
    if (h.IsRts())
    {
        c->phyRts++;
    }
    else if (h.IsCts())
    {
        c->phyCts++;
    }
    else if (h.IsAck())
    {
        c->phyAck++;
        c->ackModes[mode]++;
    }
    else if (h.IsData() && h.GetAddr1().IsGroup())
    {
        c->phyGroupData++; // broadcast (ARP requests, ...): sent at a basic rate, never acknowledged
    }
    else if (h.IsData())
    {
        c->phyData++;
        c->dataModes[mode]++;
    }
    if (txv.GetPreambleType() == WIFI_PREAMBLE_LONG)
    {
        c->longPre++;
    }
    else if (txv.GetPreambleType() == WIFI_PREAMBLE_SHORT)
    {
        c->shortPre++;
    }
}

uint32_t g_assocCount = 0;
double g_lastAssoc = -1;

void
OnAssoc(Mac48Address)
{
    g_assocCount++;
    g_lastAssoc = Simulator::Now().GetSeconds();
}

uint32_t g_assocAtStart = 0;

void
SnapshotAssoc()
{
    g_assocAtStart = g_assocCount;
}

const uint32_t kAssocMaxTx = 7; // retry limit used only while the stations associate
const uint32_t kDcfAifsn = 2;  // 802.11b DCF: DIFS = SIFS + 2 slots = 50 us
const uint32_t kSegmentSize = 1448; // TCP payload per segment: MTU 1500 - 20 (IP) - 32 (TCP + timestamps)
// ns-3 3.37 drops MPDUs older than 500 ms from the MAC queue; this makes the limit never bind
const double kMacMaxDelay = 1e6;

// ------------------------------------------------------------------ channel errors (optional)
// Frame errors besides collisions, for the investigation of channels noisier than the model's
// (--frameErrorRate): every PSDU a node receives is lost with probability 1 - (1 - b)^bytes,
// with b such that a full-size data MPDU (1500-byte IP packet: kFullMpduBytes) is lost with the
// configured rate, so a 14-byte MAC ACK almost never is. A lost frame is not acknowledged and
// the sender's DCF retries it within M_t. Installed as each PHY's PostReceptionErrorModel only
// when the rate is above 0, so the default run draws no extra random numbers.
const uint32_t kFullMpduBytes = 1536; // 24 MAC header + 8 LLC/SNAP + 1500 IP + 4 FCS

class ChannelErrorModel : public ErrorModel
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::WlanDcfChannelErrorModel")
                                .SetParent<ErrorModel>()
                                .AddConstructor<ChannelErrorModel>();
        return tid;
    }

    void Configure(double fullFrameRate, Time windowStart)
    {
        m_byteOk = std::pow(1.0 - fullFrameRate, 1.0 / kFullMpduBytes);
        m_windowStart = windowStart;
        m_rv = CreateObject<UniformRandomVariable>();
    }

    uint64_t fullSeen = 0;  // full-size frames received in the window
    uint64_t fullLost = 0;  // of those, lost to the channel
    uint64_t allLost = 0;   // frames of any size lost to the channel in the window

  private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        const uint32_t bytes = p->GetSize();
        const bool lost = m_rv->GetValue() >= std::pow(m_byteOk, bytes);
        if (Simulator::Now() >= m_windowStart)
        {
            fullSeen += bytes == kFullMpduBytes;
            fullLost += lost && bytes == kFullMpduBytes;
            allLost += lost;
        }
        return lost;
    }

    void DoReset() override
    {
    }

    double m_byteOk = 1.0;
    Time m_windowStart;
    Ptr<UniformRandomVariable> m_rv;
};

/// Set M_t on every wifi device's station manager (SSRC/SLRC limits count attempts, see main).
void
ApplyMacLimits(NetDeviceContainer devs, uint32_t maxTx, uint32_t aifsn)
{
    for (uint32_t i = 0; i < devs.GetN(); i++)
    {
        Ptr<WifiNetDevice> wd = DynamicCast<WifiNetDevice>(devs.Get(i));
        wd->GetRemoteStationManager()->SetMaxSsrc(maxTx);
        wd->GetRemoteStationManager()->SetMaxSlrc(maxTx);
        // the DCF's data Txop (beacons have their own, at PIFS); DIFS = SIFS + aifsn slots
        wd->GetMac()->GetTxop()->SetAifsn(static_cast<uint8_t>(aifsn));
    }
}

// ------------------------------------------------------------------ AP queue-disc trace counters
struct QdTraceCounters
{
    std::array<uint64_t, 3> enq{0, 0, 0}, deq{0, 0, 0}, drop{0, 0, 0};
};

QdTraceCounters g_qd;

void
OnQdEnq(Ptr<const QueueDiscItem> item)
{
    if (InWindow())
    {
        g_qd.enq[WlanClassify(item)]++;
    }
}

void
OnQdDeq(Ptr<const QueueDiscItem> item)
{
    if (InWindow())
    {
        g_qd.deq[WlanClassify(item)]++;
    }
}

void
OnQdDrop(Ptr<const QueueDiscItem> item)
{
    if (InWindow())
    {
        g_qd.drop[WlanClassify(item)]++;
    }
}

// drops in the stations' own queue discs (an uplink sender overflowing its interface queue)
std::array<uint64_t, 3> g_staQdDrop{0, 0, 0};

void
OnStaQdDrop(Ptr<const QueueDiscItem> item)
{
    if (InWindow())
    {
        g_staQdDrop[WlanClassify(item)]++;
    }
}

Ptr<WlanDataAckQueueDisc> g_wrr; // null for sched=fifo

void
ResetAtWarmup()
{
    if (g_wrr)
    {
        g_wrr->ResetCounters();
    }
}

// ------------------------------------------------------------------ tiny flat JSON writer
class Json
{
  public:
    void Str(const std::string& k, const std::string& v)
    {
        Raw(k, "\"" + Esc(v) + "\"");
    }

    void Int(const std::string& k, uint64_t v)
    {
        Raw(k, std::to_string(v));
    }

    void SInt(const std::string& k, int64_t v)
    {
        Raw(k, std::to_string(v));
    }

    void Num(const std::string& k, double v)
    {
        if (!std::isfinite(v))
        {
            Raw(k, "null");
            return;
        }
        std::ostringstream o;
        o << std::setprecision(10) << v;
        Raw(k, o.str());
    }

    void Null(const std::string& k)
    {
        Raw(k, "null");
    }

    void Raw(const std::string& k, const std::string& v)
    {
        m_items.emplace_back(k, v);
    }

    std::string Render(const std::string& indent) const
    {
        std::ostringstream o;
        o << "{";
        for (size_t i = 0; i < m_items.size(); i++)
        {
            o << (i ? "," : "") << "\n"
              << indent << "  \"" << Esc(m_items[i].first) << "\": " << m_items[i].second;
        }
        o << "\n" << indent << "}";
        return o.str();
    }

    static std::string Esc(const std::string& s)
    {
        std::string r;
        for (char ch : s)
        {
            if (ch == '"' || ch == '\\')
            {
                r += '\\';
            }
            r += ch;
        }
        return r;
    }

  private:
    std::vector<std::pair<std::string, std::string>> m_items;
};

std::string
ModesToString(const std::map<std::string, uint64_t>& m)
{
    std::string s;
    for (const auto& kv : m)
    {
        s += (s.empty() ? "" : ",") + kv.first + ":" + std::to_string(kv.second);
    }
    return s;
}

std::string
AddrStr(Ipv4Address a)
{
    std::ostringstream o;
    a.Print(o);
    return o.str();
}

void
EmitMac(Json& j, const std::string& x, const MacCounters& c)
{
    j.Int("mac_" + x + "_tx_failed", c.txFailed);
    j.Int("mac_" + x + "_final_failed", c.finalFailed);
    j.Int("mac_" + x + "_retry_drops", c.retryDrops);
    j.Int("mac_" + x + "_retry_drops_data", c.retryDropsData);
    j.Int("mac_" + x + "_retry_drops_ack", c.retryDropsAck);
    j.Int("mac_" + x + "_enqueue_drops", c.enqueueDrops);
    j.Int("mac_" + x + "_expired_drops", c.expiredDrops);
    j.Int("mac_" + x + "_acked", c.acked);
    j.Int("phy_" + x + "_tx_data", c.phyData);
    j.Int("phy_" + x + "_tx_ack", c.phyAck);
    j.Int("phy_" + x + "_tx_rts", c.phyRts);
    j.Int("phy_" + x + "_tx_cts", c.phyCts);
    j.Int("phy_" + x + "_tx_group_data", c.phyGroupData);
    j.Str("phy_" + x + "_data_modes", ModesToString(c.dataModes));
    j.Str("phy_" + x + "_ack_modes", ModesToString(c.ackModes));
    j.Int("phy_" + x + "_long_preamble", c.longPre);
    j.Int("phy_" + x + "_short_preamble", c.shortPre);
}

const char* kCls[3] = {"data", "ack", "other"};

// ------------------------------------------------------------------ one run, step by step
// The steps below keep the original order of object creation and event scheduling: ns-3 numbers
// random streams by creation order and runs same-time events in scheduling order, so reordering
// them would change the run.

/// The command line of one run.
struct Params
{
    uint32_t nDown = 1;
    uint32_t nUp = 1;
    uint32_t maxTxAttempts = 4;
    uint32_t apQueue = 100;
    std::string sched = "fifo";
    uint32_t dataWeight = 2;
    uint32_t ackWeight = 1;
    std::string queueSplit = "each";
    std::string tcp = "TcpLinuxReno";
    double duration = 500;
    double warmup = 50;
    uint32_t run = 1;
    uint32_t seed = 1;
    std::string outDir = "wlan_out";
    uint32_t macQueue = 2;
    uint32_t staQueue = 100;
    uint32_t ackQueue = 0;
    uint32_t hostQueue = 1000;
    double minRto = 0.2;
    double delAckTimeout = 0.04;
    double trafficStart = 1.0;
    double startJitter = 1.0;
    double radius = 0.45;
    double frameErrorRate = 0;
    uint32_t aifsn = kDcfAifsn;
    std::string scheduler = "ns3::CalendarScheduler";

    std::string tcpName; // "ns3::" + tcp, checked to name a TypeId
    TypeId tcpTid;

    uint32_t Stations() const
    {
        return nDown + nUp;
    }
};

Params
ParseArgs(int argc, char* argv[])
{
    Params p;
    CommandLine cmd(__FILE__);
    cmd.AddValue("down", "number of downlink TCP flows (host A -> station)", p.nDown);
    cmd.AddValue("up", "number of uplink TCP flows (station -> host A)", p.nUp);
    cmd.AddValue("maxTxAttempts", "M_t: max MAC transmission attempts per frame (1 = no retry)",
                 p.maxTxAttempts);
    cmd.AddValue("apQueue", "Q: AP buffer (queue disc) in packets", p.apQueue);
    cmd.AddValue("sched", "AP scheduling: fifo | dataack | adaptive", p.sched);
    cmd.AddValue("dataWeight", "WRR weight of the DATA queue Q1 (dataack)", p.dataWeight);
    cmd.AddValue("ackWeight", "WRR weight of the ACK queue Q2 (dataack)", p.ackWeight);
    cmd.AddValue("queueSplit", "each: Q1 and Q2 hold Q packets each; shared: Q packets in total",
                 p.queueSplit);
    cmd.AddValue("tcp", "congestion control: TcpLinuxReno | TcpNewReno | TcpBic | TcpCubic | ...",
                 p.tcp);
    cmd.AddValue("duration", "simulated seconds", p.duration);
    cmd.AddValue("warmup", "metrics cover [warmup, duration)", p.warmup);
    cmd.AddValue("run", "RngRun: the trial number (independent random runs)", p.run);
    cmd.AddValue("seed", "RngSeed", p.seed);
    cmd.AddValue("out", "output directory (created)", p.outDir);
    cmd.AddValue("macQueue", "WifiMacQueue size in packets (AP and stations)", p.macQueue);
    cmd.AddValue("staQueue", "FIFO queue disc on each station's wifi device, packets", p.staQueue);
    cmd.AddValue("ackQueue",
                 "limit of the ACK queue Q2 in packets (dataack/adaptive, queueSplit each); 0 = Q",
                 p.ackQueue);
    cmd.AddValue("hostQueue", "FIFO queue disc on the wired devices, packets", p.hostQueue);
    cmd.AddValue("minRto",
                 "TCP RTO floor in s: RTO = srtt + max(minRto, 4*rttvar), as Linux tcp_rto_min",
                 p.minRto);
    cmd.AddValue("delAckTimeout", "TCP delayed-ACK timeout in s (Linux TCP_ATO_MIN: 0.04)",
                 p.delAckTimeout);
    cmd.AddValue("trafficStart", "earliest flow start time, s", p.trafficStart);
    cmd.AddValue("startJitter", "flows start uniformly in [trafficStart, trafficStart+jitter)",
                 p.startJitter);
    cmd.AddValue("radius", "stations sit on a circle of this radius (m) around the AP", p.radius);
    cmd.AddValue("frameErrorRate",
                 "share of full-size data frames lost to channel errors at each receiver, besides "
                 "collisions (0 = none; shorter frames lose proportionally fewer bits)",
                 p.frameErrorRate);
    cmd.AddValue("aifsn",
                 "DCF AIFSN from trafficStart on: every channel access waits SIFS + aifsn slots "
                 "(802.11b's DIFS: 2); more adds the same idle time before every frame at every node",
                 p.aifsn);
    cmd.AddValue("scheduler",
                 "the event scheduler's TypeId; every ns-3 scheduler gives the same run",
                 p.scheduler);
    // ns-3 3.37's CommandLine only understands "--name=value"; also accept "--name value".
    std::vector<std::string> args{argv[0]};
    for (int i = 1; i < argc; i++)
    {
        std::string a = argv[i];
        if (a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && i + 1 < argc &&
            std::string(argv[i + 1]).rfind("--", 0) != 0)
        {
            a += "=" + std::string(argv[++i]);
        }
        args.push_back(a);
    }
    cmd.Parse(args);

    NS_ABORT_MSG_IF(p.nDown + p.nUp == 0, "need at least one flow");
    NS_ABORT_MSG_IF(p.maxTxAttempts < 1, "maxTxAttempts must be >= 1");
    NS_ABORT_MSG_IF(p.apQueue < 1 || p.macQueue < 1 || p.staQueue < 1 || p.hostQueue < 1,
                    "queue sizes must be >= 1");
    NS_ABORT_MSG_IF(p.sched != "fifo" && p.sched != "dataack" && p.sched != "adaptive",
                    "--sched must be fifo, dataack or adaptive");
    NS_ABORT_MSG_IF(p.queueSplit != "each" && p.queueSplit != "shared",
                    "--queueSplit must be each or shared");
    NS_ABORT_MSG_IF(!(p.warmup >= 0 && p.duration > p.warmup), "need 0 <= warmup < duration");
    NS_ABORT_MSG_IF(p.dataWeight < 1 || p.ackWeight < 1, "weights must be >= 1");
    NS_ABORT_MSG_IF(!(p.frameErrorRate >= 0 && p.frameErrorRate < 1),
                    "frameErrorRate must be in [0, 1)");
    NS_ABORT_MSG_IF(p.aifsn < kDcfAifsn || p.aifsn > 255, "aifsn must be in [2, 255]");

    TypeId schedulerTid;
    NS_ABORT_MSG_IF(!TypeId::LookupByNameFailSafe(p.scheduler, &schedulerTid) ||
                        !schedulerTid.IsChildOf(Scheduler::GetTypeId()),
                    "unknown event scheduler " << p.scheduler);
    p.tcpName = p.tcp.rfind("ns3::", 0) == 0 ? p.tcp : "ns3::" + p.tcp;
    NS_ABORT_MSG_IF(!TypeId::LookupByNameFailSafe(p.tcpName, &p.tcpTid),
                    "unknown TCP congestion control " << p.tcpName);
    return p;
}

/// The event scheduler, the calendar queue unless --scheduler names another. Every ns-3 scheduler
/// hands out events in one order (by time, then by the order they were scheduled), so the choice
/// changes no result; the calendar queue costs the least for this model's events
/// (docs/measurements.md).
void
ChooseScheduler(const Params& p)
{
    ObjectFactory scheduler;
    scheduler.SetTypeId(p.scheduler);
    Simulator::SetScheduler(scheduler);
}

/// The RNG run and the metric window.
void
SeedRun(const Params& p)
{
    RngSeedManager::SetSeed(p.seed);
    RngSeedManager::SetRun(p.run);
    g_winStart = p.warmup;
    g_winEnd = p.duration;
}

/// TCP, ARP and wifi device/queue defaults, set before any object is made.
void
SetDefaults(const Params& p)
{
    // TCP (paper: SACK, timestamps, window scaling, delayed ACKs, large buffers)
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(p.tcpTid));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kSegmentSize));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    // RTO: ns-3 computes max(srtt + max(ClockGranularity, 4*rttvar), MinRto).  Setting both to
    // minRto gives Linux's RTO = srtt + max(tcp_rto_min, 4*mdev) with tcp_rto_min = 200 ms (a bare
    // MinRto of 200 ms would allow RTO < srtt + 200 ms and spurious timeouts behind a long AP
    // queue; ns-3's default MinRto of 1 s is RFC 6298, not Linux).
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(p.minRto)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(Seconds(p.minRto)));
    // delayed ACK: every 2nd segment, or after Linux's minimum ATO of 40 ms (ns-3 default 200 ms)
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(p.delAckTimeout)));
    // ARP entries must not expire during a run: an expired ns-3 entry blocks traffic behind a
    // 3-packet pending queue while it re-resolves (Linux keeps using the stale entry).
    Config::SetDefault("ns3::ArpCache::AliveTimeout", TimeValue(Seconds(1e6)));
    // Wifi device: MTU 1500 like the testbed (ns-3 default is 2296).
    Config::SetDefault("ns3::WifiNetDevice::Mtu", UintegerValue(1500));
    // WifiMacQueue: small, so that packets wait in the queue disc (WifiNetDevice does flow
    // control: the helper aggregates a NetDeviceQueueInterface whose queue is stopped when the
    // MAC queue cannot take another packet and woken when an MPDU leaves it).
    Config::SetDefault("ns3::WifiMacQueue::MaxSize",
                       QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, p.macQueue)));
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(kMacMaxDelay)));
}

/// The nodes, their devices and addresses, and the queue discs that hold each device's packets.
struct Topology
{
    NodeContainer hostA, ap, stas;
    NetDeviceContainer wiredDevs, apDev, staDevs;
    Ipv4InterfaceContainer wiredIf, staIf;
    QueueDiscContainer staQd;
    Ptr<QueueDisc> apRoot;
    std::vector<Ptr<ChannelErrorModel>> channelErrors; // empty unless --frameErrorRate > 0
};

/// Host A --Ethernet-- AP ))) stations: nodes, devices, positions, channel errors, IP stacks.
Topology
BuildTopology(const Params& p)
{
    Topology t;
    const uint32_t nSta = p.Stations();
    t.hostA.Create(1);
    t.ap.Create(1);
    t.stas.Create(nSta);

    // wired: host A -- AP, 100 Mbit/s Ethernet, 0.1 ms
    CsmaHelper csma;
    csma.SetChannelAttribute("DataRate", DataRateValue(DataRate("100Mbps")));
    csma.SetChannelAttribute("Delay", TimeValue(MicroSeconds(100)));
    t.wiredDevs = csma.Install(NodeContainer(t.hostA, t.ap));

    // wireless: 802.11b DCF, 11 Mbit/s data, no RTS/CTS, no fragmentation
    YansWifiChannelHelper channel = YansWifiChannelHelper::Default();
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211b);
    // M_t mapping (ns-3 3.37 source, wifi-remote-station-manager.cc + frame-exchange-manager.cc):
    // on a missing ACK, ReportDataFailed() first increments the short retry counter SSRC, then
    // NeedRetransmission() retransmits iff SSRC < MaxSsrc.  After k failed attempts SSRC = k, so
    // a frame is sent at most MaxSsrc times: MaxSsrc counts ATTEMPTS.  Hence MaxSsrc = M_t
    // (M_t = 1: one attempt, no retransmission).  All frames are below RtsCtsThreshold, so the
    // short counter applies; MaxSlrc is set to the same value for completeness.
    // The limit is applied at trafficStart (ApplyMacLimits), before any TCP packet: during
    // association all STAs use the 802.11 default dot11ShortRetryLimit = 7.  Reason: with M_t = 1
    // the STAs, which all hear the same beacon, send their Association Requests at the same
    // instant (medium idle >= DIFS -> no backoff), collide, time out together and collide again
    // forever -- a lock-step artefact of a simulator without clock jitter.
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode", StringValue("DsssRate11Mbps"),
                                 "ControlMode", StringValue("DsssRate1Mbps"), // RTS only: unused
                                 "MaxSsrc", UintegerValue(kAssocMaxTx),
                                 "MaxSlrc", UintegerValue(kAssocMaxTx),
                                 "RtsCtsThreshold", UintegerValue(65535),
                                 "FragmentationThreshold", UintegerValue(65534));
    // ACK rate: ns-3 answers at the highest BSSBasicRateSet rate <= the data rate; the 3.37 AP
    // puts only the DSSS rates 1 and 2 Mbit/s in the basic set for 802.11b, so ACKs go at
    // 2 Mbit/s (checked at run time: phy_*_ack_modes in the JSON).
    Ssid ssid("wons2006");
    WifiMacHelper mac;
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "ActiveProbing", BooleanValue(false));
    t.staDevs = wifi.Install(phy, mac, t.stas);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid));
    t.apDev = wifi.Install(phy, mac, t.ap);

    // positions: AP at the origin, stations on a circle of radius 0.45 m.  Every pair of wifi
    // nodes is then <= 1 m apart, i.e. within LogDistance's reference distance, so every node
    // receives every other at the same power (about -31 dBm, SNR ~ 70 dB): no PHY errors, all
    // nodes hear each other, and any overlap of two frames destroys both (no capture).
    MobilityHelper mobility;
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    pos->Add(Vector(0, 0, 0));
    for (uint32_t i = 0; i < nSta; i++)
    {
        double a = 2 * 3.14159265358979323846 * i / nSta;
        pos->Add(Vector(p.radius * std::cos(a), p.radius * std::sin(a), 0));
    }
    mobility.SetPositionAllocator(pos);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    NodeContainer wlanNodes(t.ap, t.stas);
    mobility.Install(wlanNodes);

    // channel errors besides collisions (off unless --frameErrorRate > 0): one model per receiver
    if (p.frameErrorRate > 0)
    {
        NetDeviceContainer wlanDevs(t.apDev, t.staDevs);
        for (uint32_t i = 0; i < wlanDevs.GetN(); i++)
        {
            Ptr<ChannelErrorModel> em = CreateObject<ChannelErrorModel>();
            em->Configure(p.frameErrorRate, Seconds(p.warmup));
            DynamicCast<WifiNetDevice>(wlanDevs.Get(i))->GetPhy()->SetPostReceptionErrorModel(em);
            t.channelErrors.push_back(em);
        }
    }

    InternetStackHelper internet;
    internet.Install(t.hostA);
    internet.Install(t.ap);
    internet.Install(t.stas);
    return t;
}

/// FIFO queue discs on the wired devices and stations; the AP's is a FIFO of Q packets or the
/// paper's DATA/ACK scheduler (sched).
void
InstallQueueDiscs(const Params& p, Topology& t)
{
    TrafficControlHelper tchWired;
    tchWired.SetRootQueueDisc("ns3::FifoQueueDisc",
                              "MaxSize",
                              QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, p.hostQueue)));
    tchWired.Install(t.wiredDevs);
    TrafficControlHelper tchSta;
    tchSta.SetRootQueueDisc("ns3::FifoQueueDisc",
                            "MaxSize",
                            QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, p.staQueue)));
    t.staQd = tchSta.Install(t.staDevs);

    TrafficControlHelper tchAp;
    if (p.sched == "fifo")
    {
        tchAp.SetRootQueueDisc("ns3::FifoQueueDisc",
                               "MaxSize",
                               QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, p.apQueue)));
    }
    else
    {
        bool shared = (p.queueSplit == "shared");
        tchAp.SetRootQueueDisc("ns3::WlanDataAckQueueDisc",
                               "DataWeight", UintegerValue(p.dataWeight),
                               "AckWeight", UintegerValue(p.ackWeight),
                               "LimitQ1", UintegerValue(shared ? 0 : p.apQueue),
                               "LimitQ2", UintegerValue(shared ? 0 : (p.ackQueue ? p.ackQueue : p.apQueue)),
                               "LimitTotal", UintegerValue(shared ? p.apQueue : 0),
                               "Adaptive", BooleanValue(p.sched == "adaptive"));
    }
    t.apRoot = tchAp.Install(t.apDev).Get(0);
    g_wrr = DynamicCast<WlanDataAckQueueDisc>(t.apRoot);
}

/// Two IPv4 subnets, routed by the AP (see the top of the file for why it is not a bridge).
void
AssignAddresses(Topology& t)
{
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    t.wiredIf = addr.Assign(t.wiredDevs);
    addr.SetBase("10.1.0.0", "255.255.255.0");
    addr.Assign(t.apDev);
    t.staIf = addr.Assign(t.staDevs);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
}

void
HookWifi(Ptr<NetDevice> dev, MacCounters* c, bool isSta)
{
    Ptr<WifiNetDevice> wd = DynamicCast<WifiNetDevice>(dev);
    NS_ABORT_MSG_IF(!wd, "not a wifi device");
    NS_ABORT_MSG_IF(!wd->GetObject<NetDeviceQueueInterface>(),
                    "wifi device has no NetDeviceQueueInterface (no flow control)");
    wd->GetMac()->TraceConnectWithoutContext("DroppedMpdu", MakeBoundCallback(&OnMacDropped, c));
    wd->GetMac()->TraceConnectWithoutContext("MacTxDrop", MakeBoundCallback(&OnMacTxDrop, c));
    wd->GetMac()->TraceConnectWithoutContext("AckedMpdu", MakeBoundCallback(&OnMacAcked, c));
    wd->GetRemoteStationManager()->TraceConnectWithoutContext(
        "MacTxDataFailed", MakeBoundCallback(&OnTxDataFailed, c));
    wd->GetRemoteStationManager()->TraceConnectWithoutContext(
        "MacTxFinalDataFailed", MakeBoundCallback(&OnFinalDataFailed, c));
    wd->GetRemoteStationManager()->TraceConnectWithoutContext("MacTxFinalDataFailed",
                                                              MakeCallback(&OnRunFinalFailed));
    wd->GetRemoteStationManager()->TraceConnectWithoutContext("MacTxFinalRtsFailed",
                                                              MakeCallback(&OnRunFinalFailed));
    wd->GetPhy()->TraceConnectWithoutContext("MonitorSnifferTx",
                                             MakeBoundCallback(&OnSnifferTx, c));
    if (isSta)
    {
        wd->GetMac()->TraceConnectWithoutContext("Assoc", MakeCallback(&OnAssoc));
    }
}

/// The counters of queue discs, MAC and PHY (the flows' own are hooked as each flow starts).
void
AttachCounters(const Topology& t)
{
    for (uint32_t i = 0; i < t.staQd.GetN(); i++)
    {
        t.staQd.Get(i)->TraceConnectWithoutContext("Drop", MakeCallback(&OnStaQdDrop));
    }
    t.apRoot->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnQdEnq));
    t.apRoot->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnQdDeq));
    t.apRoot->TraceConnectWithoutContext("Drop", MakeCallback(&OnQdDrop));
    HookWifi(t.apDev.Get(0), &g_macAp, false);
    for (uint32_t i = 0; i < t.staDevs.GetN(); i++)
    {
        HookWifi(t.staDevs.Get(i), &g_macSta, true);
    }
}

/// One bulk TCP flow per station, with its sink and counters; returns the flows' statistics.
// Station k (1-based) carries flow k: stations 1..down are downlink receivers, stations
// down+1..down+up are uplink senders.  Start times are drawn uniformly in
// [trafficStart, trafficStart + startJitter) so flows do not start in lock-step; the first
// trafficStart seconds leave time for the stations to associate.
std::vector<FlowStats>
InstallTraffic(const Params& p, const Topology& t)
{
    const uint32_t nSta = p.Stations();
    Ptr<UniformRandomVariable> jitter = CreateObject<UniformRandomVariable>();
    std::vector<FlowStats> flows;
    flows.reserve(nSta);
    for (uint32_t k = 1; k <= nSta; k++)
    {
        bool down = (k <= p.nDown);
        FlowStats f;
        f.id = static_cast<int>(k);
        f.dir = down ? "down" : "up";
        f.station = static_cast<int>(k);
        f.port = static_cast<uint16_t>(5000 + k);
        f.start = p.trafficStart + jitter->GetValue(0, p.startJitter);
        Ipv4Address staAddr = t.staIf.GetAddress(k - 1);
        Ipv4Address hostAddr = t.wiredIf.GetAddress(0);
        f.src = AddrStr(down ? hostAddr : staAddr);
        f.dst = AddrStr(down ? staAddr : hostAddr);
        flows.push_back(f);
    }
    // the callbacks below keep pointers into flows: it is not resized after this point
    for (uint32_t k = 1; k <= nSta; k++)
    {
        FlowStats* f = &flows[k - 1];
        bool down = (f->dir == "down");
        Ptr<Node> srcNode = down ? t.hostA.Get(0) : t.stas.Get(k - 1);
        Ptr<Node> dstNode = down ? t.stas.Get(k - 1) : t.hostA.Get(0);
        Ipv4Address dstAddr = down ? t.staIf.GetAddress(k - 1) : t.wiredIf.GetAddress(0);

        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), f->port));
        ApplicationContainer sinkApp = sinkHelper.Install(dstNode);
        sinkApp.Start(Seconds(0));
        DynamicCast<PacketSink>(sinkApp.Get(0))
            ->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnSinkRx, f));

        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(dstAddr, f->port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(14480));
        ApplicationContainer srcApp = bulk.Install(srcNode);
        srcApp.Start(Seconds(f->start));
        Ptr<BulkSendApplication> app = DynamicCast<BulkSendApplication>(srcApp.Get(0));
        // the socket exists once the application has started; only the SYN precedes the hook
        Simulator::Schedule(Seconds(f->start) + MicroSeconds(1), &HookSender, app, f);
    }
    return flows;
}

/// At trafficStart, once the stations have associated: M_t and AIFSN on every wifi device.
void
ScheduleMacSettings(const Params& p, const Topology& t)
{
    Simulator::Schedule(Seconds(p.trafficStart), &SnapshotAssoc);
    NetDeviceContainer allWifi(t.apDev, t.staDevs);
    Simulator::Schedule(Seconds(p.trafficStart), &ApplyMacLimits, allWifi, p.maxTxAttempts, p.aifsn);
    Simulator::Schedule(Seconds(p.warmup), &ResetAtWarmup);
}

/// Runs the simulation to `duration`; returns its wall-clock time in seconds.
double
RunSimulation(const Params& p)
{
    Simulator::Stop(Seconds(p.duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count();
}

void
EmitParameters(Json& j, const Params& p, double wall)
{
    j.Int("down", p.nDown);
    j.Int("up", p.nUp);
    j.Int("maxTxAttempts", p.maxTxAttempts);
    j.Int("apQueue", p.apQueue);
    j.Str("sched", p.sched);
    j.Int("dataWeight", p.dataWeight);
    j.Int("ackWeight", p.ackWeight);
    j.Str("queueSplit", p.queueSplit);
    j.Str("tcp", p.tcpName.substr(5));
    j.Num("duration_s", p.duration);
    j.Num("warmup_s", p.warmup);
    j.Num("window_s", p.duration - p.warmup);
    j.Int("run", p.run);
    j.Int("seed", p.seed);
    j.Int("macQueue", p.macQueue);
    j.Int("staQueue", p.staQueue);
    j.Int("ackQueue",
          p.sched != "fifo" && p.queueSplit == "each" ? (p.ackQueue ? p.ackQueue : p.apQueue) : 0);
    j.Int("hostQueue", p.hostQueue);
    j.Num("minRto_s", p.minRto);
    j.Num("delAckTimeout_s", p.delAckTimeout);
    j.Num("trafficStart_s", p.trafficStart);
    j.Num("startJitter_s", p.startJitter);
    j.Str("ns3_version",
          std::to_string(NS3_VERSION_MAJOR) + "." + std::to_string(NS3_VERSION_MINOR));
    j.Int("tcp_segment_bytes", kSegmentSize);
    j.Int("ns3_max_ssrc", p.maxTxAttempts);
    j.Int("assoc_max_ssrc", kAssocMaxTx);
    j.Num("mac_queue_max_delay_s", kMacMaxDelay);
    j.Num("station_radius_m", p.radius);
    j.Int("aifsn", p.aifsn);
    j.Int("stations_associated", g_assocAtStart);
    j.Num("last_assoc_time_s", g_lastAssoc);
    j.Num("wall_clock_s", wall);
}

void
EmitChannelErrors(Json& j, const Params& p, const Topology& t)
{
    uint64_t seen = 0, lostFull = 0, lost = 0;
    for (const auto& em : t.channelErrors)
    {
        seen += em->fullSeen;
        lostFull += em->fullLost;
        lost += em->allLost;
    }
    j.Num("frame_error_rate", p.frameErrorRate);
    j.Int("phy_rx_full_frames", seen);
    j.Int("phy_rx_full_frames_channel_lost", lostFull);
    j.Int("phy_rx_frames_channel_lost", lost);
}

/// The flows as a JSON list; adds the per-direction totals to `j`.  Returns (down, up) goodput
/// in packets/s for the summary line.
std::pair<double, double>
EmitFlows(Json& j, const std::vector<FlowStats>& flows, double window, std::string& flowsJson)
{
    std::ostringstream o;
    o << "[";
    struct DirTot
    {
        uint64_t rx = 0, sent = 0, retx = 0;
    } tot[2];
    for (size_t i = 0; i < flows.size(); i++)
    {
        const FlowStats& f = flows[i];
        Json fj;
        fj.Int("id", f.id);
        fj.Str("direction", f.dir);
        fj.Int("station", f.station);
        fj.Str("src", f.src);
        fj.Str("dst", f.dst);
        fj.Int("port", f.port);
        fj.Num("start_s", f.start);
        fj.Int("rx_bytes", f.rxBytes);
        fj.Num("goodput_pkts_s", f.rxBytes / double(kSegmentSize) / window);
        fj.Num("goodput_kbps", f.rxBytes * 8.0 / 1000.0 / window);
        fj.Int("data_sent", f.dataSent);
        fj.Int("data_retx", f.dataRetx);
        fj.Num("loss_prob", f.dataSent ? double(f.dataRetx) / f.dataSent : NAN);
        fj.Int("rto_events", f.rtoEvents);
        fj.Int("recovery_events", f.recoveryEvents);
        o << (i ? "," : "") << "\n    " << fj.Render("    ");
        DirTot& d = tot[f.dir == "down" ? 0 : 1];
        d.rx += f.rxBytes;
        d.sent += f.dataSent;
        d.retx += f.dataRetx;
    }
    o << "\n  ]";
    flowsJson = o.str();

    const char* dirName[2] = {"down", "up"};
    double gp[2];
    for (int d = 0; d < 2; d++)
    {
        std::string x = dirName[d];
        gp[d] = tot[d].rx / double(kSegmentSize) / window;
        j.Int(x + "_rx_bytes", tot[d].rx);
        j.Num(x + "_goodput_pkts_s", gp[d]);
        j.Num(x + "_goodput_kbps", tot[d].rx * 8.0 / 1000.0 / window);
        j.Int(x + "_data_sent", tot[d].sent);
        j.Int(x + "_data_retx", tot[d].retx);
        j.Num(x + "_loss_prob", tot[d].sent ? double(tot[d].retx) / tot[d].sent : NAN);
    }
    j.Num("total_goodput_pkts_s", gp[0] + gp[1]);
    j.Num("total_goodput_kbps", (tot[0].rx + tot[1].rx) * 8.0 / 1000.0 / window);
    j.Num("ratio_down_up", gp[1] > 0 ? gp[0] / gp[1] : NAN);
    return {gp[0], gp[1]};
}

void
EmitQueues(Json& j, const Params& p)
{
    for (int c = 0; c < 3; c++)
    {
        j.Int(std::string("ap_qdisc_enq_") + kCls[c], g_qd.enq[c]);
        j.Int(std::string("ap_qdisc_deq_") + kCls[c], g_qd.deq[c]);
        j.Int(std::string("ap_qdisc_drop_") + kCls[c], g_qd.drop[c]);
    }
    for (int c = 0; c < 3; c++)
    {
        j.Int(std::string("sta_qdisc_drop_") + kCls[c], g_staQdDrop[c]);
    }
    for (int q = 0; q < 2; q++)
    {
        WlanQueueCounters qc;
        if (g_wrr)
        {
            qc = g_wrr->GetCounters(q);
        }
        else if (q == 0)
        {
            qc.enq = g_qd.enq;
            qc.deq = g_qd.deq;
            qc.drop = g_qd.drop;
        }
        std::string pre = "ap_q" + std::to_string(q + 1) + "_";
        for (int c = 0; c < 3; c++)
        {
            j.Int(pre + "enq_" + kCls[c], qc.enq[c]);
            j.Int(pre + "deq_" + kCls[c], qc.deq[c]);
            j.Int(pre + "drop_" + kCls[c], qc.drop[c]);
        }
    }
    if (p.sched == "adaptive" && g_wrr)
    {
        j.Int("adapt_final_data_weight", g_wrr->GetDataWeight());
        j.Int("adapt_final_ack_weight", g_wrr->GetAckWeight());
        j.Num("adapt_mean_n_down", g_wrr->GetMeanNDown());
        j.Num("adapt_mean_n_up", g_wrr->GetMeanNUp());
        j.Int("adapt_weight_changes", g_wrr->GetWeightChanges());
    }
}

/// Writes OUT/wlan.json (the format at the top of this file) and prints a one-line summary.
void
WriteOutput(const Params& p,
            const Topology& t,
            const std::vector<FlowStats>& flows,
            double wall)
{
    const double window = p.duration - p.warmup;
    Json j;
    EmitParameters(j, p, wall);
    if (p.frameErrorRate > 0)
    {
        EmitChannelErrors(j, p, t);
    }
    std::string flowsJson;
    auto [down, up] = EmitFlows(j, flows, window, flowsJson);
    EmitQueues(j, p);
    EmitMac(j, "ap", g_macAp);
    EmitMac(j, "sta", g_macSta);
    j.Int("run_final_failed", g_runFinalFailed);
    uint64_t dataFrames = g_macAp.phyData + g_macSta.phyData;
    j.Num("mac_tx_failed_prob",
          dataFrames ? double(g_macAp.txFailed + g_macSta.txFailed) / dataFrames : NAN);
    j.Raw("flows", flowsJson);

    std::filesystem::create_directories(p.outDir);
    std::string path = p.outDir + "/wlan.json";
    std::ofstream out(path);
    out << j.Render("") << "\n";
    out.close();

    std::cout << std::fixed << std::setprecision(1) << "dl" << p.nDown << "-ul" << p.nUp
              << " Mt=" << p.maxTxAttempts << " Q=" << p.apQueue << " " << p.sched
              << ": down=" << down << " up=" << up << " total=" << down + up
              << " pkts/s; wall " << std::setprecision(2) << wall << " s -> " << path
              << std::endl;
}

} // namespace

int
main(int argc, char* argv[])
{
    Params p = ParseArgs(argc, argv);
    ChooseScheduler(p);
    SeedRun(p);
    SetDefaults(p);
    Topology t = BuildTopology(p);
    InstallQueueDiscs(p, t);
    AssignAddresses(t);
    AttachCounters(t);
    std::vector<FlowStats> flows = InstallTraffic(p, t);
    ScheduleMacSettings(p, t);
    double wall = RunSimulation(p);
    WriteOutput(p, t, flows, wall);
    Simulator::Destroy();
    return 0;
}
