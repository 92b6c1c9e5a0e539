"""archive: the committed raw trials (data/): packed and restored (trials.py), with the lossless
column forms that store tcp_probe traces and qdisc samples smaller (stored_forms.py and its codecs)."""
