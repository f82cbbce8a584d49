"""The analysis: bindings, the TensorFlow API catalog and the session-loop visitor. Never imports TensorFlow."""
