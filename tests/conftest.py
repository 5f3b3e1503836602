import os

from hypothesis import HealthCheck, settings

# CI runs a fixed example sequence so that a red build can be reproduced exactly.
settings.register_profile("default", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
