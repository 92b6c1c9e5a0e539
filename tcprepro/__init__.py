"""tcprepro: re-run four classic TCP studies on emulated networks and regenerate their results."""
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
