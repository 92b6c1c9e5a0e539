"""Figure 5a/5b: average aggregate retransmitted packets per trial (tcptrace, summed over the TCP
flows of a trial, as the paper's footnote 6) at 50 and 100 ms RTT."""
from __future__ import annotations

from pathlib import Path

from figures.collateral.bars import bars
from figures.collateral.common import Run


def main(run: Run) -> list[Path]:
    return bars(run, "rexmt_data_pkts", "retransmitted packets per trial",
                {50: "Fig. 5a: retransmissions, 50 ms RTT", 100: "Fig. 5b: retransmissions, 100 ms RTT"},
                "fig5_retransmissions")
