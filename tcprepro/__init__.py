"""tcprepro: re-run four classic TCP studies on emulated networks and regenerate their results.
This package is the roof: the command line over every layer below it."""
