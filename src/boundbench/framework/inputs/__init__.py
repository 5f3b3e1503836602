"""What a call is given, checked: declared argument specs (:mod:`.validate`), the checks a
body makes on its values (:mod:`.values`), what one call may ask of the machine
(:mod:`.limits`) and the boxes of an assumption space (:mod:`.boxes`). The bottom room: it
imports nothing of the framework's other rooms."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["boxes", "limits", "validate", "values"]
