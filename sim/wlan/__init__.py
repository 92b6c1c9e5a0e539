"""The 802.11b DCF model (wlan_dcf.cc) and its trial adapter (model.py)."""
