// wlan_dataack_queue_disc.h -- the AP scheduler of Vacirca & Cuomo (WONS 2006), Section IV,
// as an ns-3 (3.37) QueueDisc.  Header-only; included by exactly one translation unit
// (wlan_dcf.cc), which also holds NS_OBJECT_ENSURE_REGISTERED for the class.
//
//   classifier: TCP segment with payload > 0            -> Q1 ("DATA")
//               TCP segment with payload == 0            -> Q2 ("ACK": pure ACKs, and also the
//                                                            payload-less SYN/SYN-ACK/FIN/RST)
//               anything else (ARP, ICMP, UDP, ...)      -> Q1 (class "OTHER")
//   scheduler:  weighted round robin in packets, DataWeight:AckWeight (default 2:1, the paper's
//               "2:3 for TCP DATA (Q1) and 1:3 for the ACK queue (Q2)"); work-conserving: when
//               the queue whose turn it is is empty the other one is served.
//   limits:     LimitQ1 / LimitQ2 (packets, per internal queue, 0 = none) and LimitTotal (packets,
//               whole disc, 0 = none).  A packet that does not fit is dropped on arrival
//               (drop-tail), like Linux pfifo.
//   adaptive:   if Adaptive=true, every AdaptInterval the weights are recomputed as
//               DATA:ACK = 2*N_down : N_up (each at least 1, divided by their gcd), where
//               N_down = number of distinct TCP 5-tuples that had a DATA packet enqueued here in
//               the last FlowTimeout, N_up = same for pure ACKs.  At the AP's wireless interface
//               every packet travels toward the stations, so N_down counts downlink TCP flows
//               and N_up counts uplink TCP flows (whose ACKs go down).
//   counters:   per internal queue and per class (DATA/ACK/OTHER): enqueued, dequeued, dropped.
//               ResetCounters() zeroes them (called at the start of the metric window).
#ifndef WLAN_DATAACK_QUEUE_DISC_H
#define WLAN_DATAACK_QUEUE_DISC_H

#include "ns3/boolean.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/log.h"
#include "ns3/nstime.h"
#include "ns3/queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/tcp-header.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <numeric>
#include <tuple>

namespace ns3
{

/// Packet classes used by the classifier and by all counters of this program.
enum PktClass : int
{
    PKT_DATA = 0,  ///< TCP segment carrying payload
    PKT_ACK = 1,   ///< TCP segment without payload (pure ACK; also SYN/FIN/RST without data)
    PKT_OTHER = 2, ///< not TCP over IPv4 (ARP, ICMP, ...)
};

/// TCP flow identifier (the protocol is always TCP).
struct WlanFlowKey
{
    uint32_t src = 0, dst = 0;
    uint16_t sport = 0, dport = 0;

    bool operator<(const WlanFlowKey& o) const
    {
        return std::tie(src, dst, sport, dport) < std::tie(o.src, o.dst, o.sport, o.dport);
    }
};

/// Classify a queue-disc item.  For IPv4 items the packet carried by the item does not contain
/// the IP header (ns-3 keeps it apart until dequeue), so the TCP header is at the front.
inline PktClass
WlanClassify(Ptr<const QueueDiscItem> item, WlanFlowKey* key = nullptr)
{
    Ptr<const Ipv4QueueDiscItem> ipItem = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (!ipItem)
    {
        return PKT_OTHER;
    }
    const Ipv4Header& ip = ipItem->GetHeader();
    if (ip.GetProtocol() != 6 || ip.GetFragmentOffset() != 0)
    {
        return PKT_OTHER;
    }
    Ptr<Packet> p = item->GetPacket();
    TcpHeader tcp;
    if (p->PeekHeader(tcp) == 0)
    {
        return PKT_OTHER;
    }
    if (key)
    {
        key->src = ip.GetSource().Get();
        key->dst = ip.GetDestination().Get();
        key->sport = tcp.GetSourcePort();
        key->dport = tcp.GetDestinationPort();
    }
    uint32_t hdr = tcp.GetSerializedSize();
    return (p->GetSize() > hdr) ? PKT_DATA : PKT_ACK;
}

/// Per-queue counters, indexed by PktClass.
struct WlanQueueCounters
{
    std::array<uint64_t, 3> enq{0, 0, 0};
    std::array<uint64_t, 3> deq{0, 0, 0};
    std::array<uint64_t, 3> drop{0, 0, 0};
};

class WlanDataAckQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("ns3::WlanDataAckQueueDisc")
                .SetParent<QueueDisc>()
                .SetGroupName("TrafficControl")
                .AddConstructor<WlanDataAckQueueDisc>()
                .AddAttribute("DataWeight",
                              "WRR weight (packets per round) of Q1 (TCP DATA and non-TCP)",
                              UintegerValue(2),
                              MakeUintegerAccessor(&WlanDataAckQueueDisc::m_weightCfg0),
                              MakeUintegerChecker<uint32_t>(1))
                .AddAttribute("AckWeight",
                              "WRR weight (packets per round) of Q2 (pure TCP ACKs)",
                              UintegerValue(1),
                              MakeUintegerAccessor(&WlanDataAckQueueDisc::m_weightCfg1),
                              MakeUintegerChecker<uint32_t>(1))
                .AddAttribute("LimitQ1",
                              "Max packets in Q1 (0 = no per-queue limit)",
                              UintegerValue(100),
                              MakeUintegerAccessor(&WlanDataAckQueueDisc::m_limitQ1),
                              MakeUintegerChecker<uint32_t>())
                .AddAttribute("LimitQ2",
                              "Max packets in Q2 (0 = no per-queue limit)",
                              UintegerValue(100),
                              MakeUintegerAccessor(&WlanDataAckQueueDisc::m_limitQ2),
                              MakeUintegerChecker<uint32_t>())
                .AddAttribute("LimitTotal",
                              "Max packets in Q1+Q2 (0 = no total limit)",
                              UintegerValue(0),
                              MakeUintegerAccessor(&WlanDataAckQueueDisc::m_limitTotal),
                              MakeUintegerChecker<uint32_t>())
                .AddAttribute("Adaptive",
                              "Recompute weights as 2*N_down : N_up from the active TCP flows",
                              BooleanValue(false),
                              MakeBooleanAccessor(&WlanDataAckQueueDisc::m_adaptive),
                              MakeBooleanChecker())
                .AddAttribute("AdaptInterval",
                              "Period of the weight recomputation (Adaptive=true)",
                              TimeValue(MilliSeconds(100)),
                              MakeTimeAccessor(&WlanDataAckQueueDisc::m_adaptInterval),
                              MakeTimeChecker())
                .AddAttribute("FlowTimeout",
                              "A flow counts as active if seen within this time (Adaptive=true)",
                              TimeValue(Seconds(1)),
                              MakeTimeAccessor(&WlanDataAckQueueDisc::m_flowTimeout),
                              MakeTimeChecker());
        return tid;
    }

    WlanDataAckQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::NO_LIMITS)
    {
    }

    // ---- read-out for the program's JSON ----
    const WlanQueueCounters& GetCounters(int q) const
    {
        return m_cnt[q];
    }

    void ResetCounters()
    {
        m_cnt[0] = WlanQueueCounters();
        m_cnt[1] = WlanQueueCounters();
        m_adaptTicks = 0;
        m_sumNDown = 0;
        m_sumNUp = 0;
        m_weightChanges = 0;
    }

    uint32_t GetDataWeight() const
    {
        return m_weight[0];
    }

    uint32_t GetAckWeight() const
    {
        return m_weight[1];
    }

    uint64_t GetAdaptTicks() const
    {
        return m_adaptTicks;
    }

    double GetMeanNDown() const
    {
        return m_adaptTicks ? double(m_sumNDown) / m_adaptTicks : 0.0;
    }

    double GetMeanNUp() const
    {
        return m_adaptTicks ? double(m_sumNUp) / m_adaptTicks : 0.0;
    }

    uint64_t GetWeightChanges() const
    {
        return m_weightChanges;
    }

  private:
    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        WlanFlowKey key;
        PktClass c = WlanClassify(item, &key);
        int q = (c == PKT_ACK) ? 1 : 0;
        if (m_adaptive && c != PKT_OTHER)
        {
            (c == PKT_DATA ? m_lastData : m_lastAck)[key] = Simulator::Now();
        }
        uint32_t limit = (q == 0) ? m_limitQ1 : m_limitQ2;
        if ((m_limitTotal && GetNPackets() >= m_limitTotal) ||
            (limit && GetInternalQueue(q)->GetNPackets() >= limit))
        {
            m_cnt[q].drop[c]++;
            DropBeforeEnqueue(item, "Queue disc limit exceeded");
            return false;
        }
        // the internal queues are never full (see CheckConfig), so this succeeds
        bool ok = GetInternalQueue(q)->Enqueue(item);
        if (ok)
        {
            m_cnt[q].enq[c]++;
        }
        else
        {
            m_cnt[q].drop[c]++;
        }
        return ok;
    }

    /// Queue the WRR serves next, or -1 if both are empty.  Does not change state.
    int Select() const
    {
        bool e0 = GetInternalQueue(0)->IsEmpty();
        bool e1 = GetInternalQueue(1)->IsEmpty();
        if (e0 && e1)
        {
            return -1;
        }
        bool curEmpty = (m_cur == 0) ? e0 : e1;
        if (m_credit > 0 && !curEmpty)
        {
            return m_cur; // still in the current queue's turn
        }
        int other = 1 - m_cur;
        bool otherEmpty = (other == 0) ? e0 : e1;
        if (!otherEmpty)
        {
            return other; // turn over (or current queue empty): next queue
        }
        return m_cur; // other queue empty: keep serving (work-conserving)
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        int q = Select();
        if (q < 0)
        {
            return nullptr;
        }
        if (q != m_cur)
        {
            m_cur = q;
            m_credit = m_weight[q];
        }
        else if (m_credit == 0)
        {
            m_credit = m_weight[q]; // a new turn for the same queue (the other one is empty)
        }
        Ptr<QueueDiscItem> item = GetInternalQueue(q)->Dequeue();
        if (item)
        {
            m_credit--;
            m_cnt[q].deq[WlanClassify(item)]++;
        }
        return item;
    }

    bool CheckConfig() override
    {
        if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0)
        {
            return false;
        }
        if (GetNInternalQueues() == 0)
        {
            // limits are enforced in DoEnqueue; the internal FIFOs themselves never drop
            for (int i = 0; i < 2; i++)
            {
                AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                    "MaxSize",
                    QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1000000))));
            }
        }
        return GetNInternalQueues() == 2;
    }

    void InitializeParams() override
    {
        m_weight[0] = m_weightCfg0;
        m_weight[1] = m_weightCfg1;
        m_cur = 0;
        m_credit = m_weight[0];
        if (m_adaptive)
        {
            m_adaptEvent = Simulator::Schedule(m_adaptInterval, &WlanDataAckQueueDisc::Adapt, this);
        }
    }

    void DoDispose() override
    {
        m_adaptEvent.Cancel();
        m_lastData.clear();
        m_lastAck.clear();
        QueueDisc::DoDispose();
    }

    static uint32_t CountActive(std::map<WlanFlowKey, Time>& m, Time now, Time timeout)
    {
        uint32_t n = 0;
        for (auto it = m.begin(); it != m.end();)
        {
            if (now - it->second > timeout)
            {
                it = m.erase(it);
            }
            else
            {
                ++n;
                ++it;
            }
        }
        return n;
    }

    void Adapt()
    {
        Time now = Simulator::Now();
        uint32_t nDown = CountActive(m_lastData, now, m_flowTimeout);
        uint32_t nUp = CountActive(m_lastAck, now, m_flowTimeout);
        uint32_t w0 = std::max<uint32_t>(1, 2 * nDown);
        uint32_t w1 = std::max<uint32_t>(1, nUp);
        uint32_t g = std::gcd(w0, w1);
        w0 /= g;
        w1 /= g;
        if (w0 != m_weight[0] || w1 != m_weight[1])
        {
            m_weightChanges++;
        }
        m_weight[0] = w0;
        m_weight[1] = w1;
        m_adaptTicks++;
        m_sumNDown += nDown;
        m_sumNUp += nUp;
        m_adaptEvent = Simulator::Schedule(m_adaptInterval, &WlanDataAckQueueDisc::Adapt, this);
    }

    // configuration
    uint32_t m_weightCfg0{2};
    uint32_t m_weightCfg1{1};
    uint32_t m_limitQ1{100};
    uint32_t m_limitQ2{100};
    uint32_t m_limitTotal{0};
    bool m_adaptive{false};
    Time m_adaptInterval;
    Time m_flowTimeout;
    // WRR state
    std::array<uint32_t, 2> m_weight{2, 1};
    int m_cur{0};
    uint32_t m_credit{0};
    // adaptive state
    std::map<WlanFlowKey, Time> m_lastData;
    std::map<WlanFlowKey, Time> m_lastAck;
    EventId m_adaptEvent;
    uint64_t m_adaptTicks{0};
    uint64_t m_sumNDown{0};
    uint64_t m_sumNUp{0};
    uint64_t m_weightChanges{0};
    // counters
    std::array<WlanQueueCounters, 2> m_cnt;
};

} // namespace ns3

#endif // WLAN_DATAACK_QUEUE_DISC_H
