"""What a fine-tuned model is measured by: accuracy, calibration, robustness to embedding noise
and token corruption, CKA to the pretrained encoder and the head's Hessian (``evaluate``), and
the bridge to ``synthetic``'s bounds: feature bound B, SVM margin, exact head leave-one-out
stability, the distance travelled from the start (``diagnostics``)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["diagnostics", "evaluate"]
