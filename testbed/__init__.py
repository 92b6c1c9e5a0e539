"""The trial lifecycle: build an emulated network, configure it, measure, tear it down."""
