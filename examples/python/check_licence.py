"""Verifies a licence offline, then checks it with the service, saying each step in plain words.

Reads LICENSOR_URL, LICENSOR_ORG, LICENSOR_PRODUCT_KEY, LICENSOR_CHECK_ID, LICENSOR_CHECK_TOKEN,
LICENSOR_PUBLIC_KEY_FILE (PEM), LICENSOR_LICENCE_FILE (.lic) and LICENSOR_STATE_DIR (optional).
Exits 0 exactly when the check's state is VALID.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from licensor import LicenceClient, LicensorError, file_store, verify_licence


def setting(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        sys.exit(f"{name} is not set")
    return value


def main() -> int:
    public_key = Path(setting("LICENSOR_PUBLIC_KEY_FILE")).read_text(encoding="utf-8")
    licence = Path(setting("LICENSOR_LICENCE_FILE")).read_text(encoding="utf-8").strip()
    org, product_key = setting("LICENSOR_ORG"), setting("LICENSOR_PRODUCT_KEY")

    offline = verify_licence(licence, public_key, product_key=product_key, organisation=org)
    if offline.claims is None:
        print(f"The licence is not a genuine licence for this product: {', '.join(offline.reasons)} ({offline.message}).")
        return 1
    print(f"The licence {offline.claims['lid']} for {offline.claims.get('lic', 'an unnamed licensee')} is signed by the product's key.")
    if not offline.valid:
        print(f"It cannot be used here: {', '.join(offline.reasons)}.")
        return 1
    ends = offline.grace_ends_at.isoformat() if offline.grace_ends_at else "never (perpetual)"
    print(f"Offline it is {offline.status}; it may be used until {ends}.")

    try:
        client = LicenceClient(
            base_url=setting("LICENSOR_URL"),
            slug=org,
            check_id=setting("LICENSOR_CHECK_ID"),
            check_token=setting("LICENSOR_CHECK_TOKEN"),
            public_keys=public_key,
            licence=licence,
            product_key=product_key,
            store=file_store(os.environ.get("LICENSOR_STATE_DIR") or None),
        )
    except LicensorError as error:
        print(f"This licence cannot be checked online: {error.message} ({error.code}).")
        return 1

    print("Asking the licensing service about it...")
    result = client.check()
    if result.no_answer is not None:
        status = f" {result.no_answer.status}" if result.no_answer.status is not None else ""
        print(f"The service gave no answer that counts ({result.no_answer.code}{status}): {result.no_answer.message}.")
    elif result.answer is not None:
        print(f"The service answered with a signed receipt: status {result.answer.status or 'unknown'}, checked at {result.answer.checked_at}.")
    if result.state == "VALID":
        print("VALID: the licence is in good standing on this computer.")
    elif result.state == "STALE":
        print("STALE: the licence could not be confirmed recently" + (" (the clock went back)." if result.clock_rollback else "."))
    else:
        print(f"INVALID: {', '.join(result.reasons)}" + (f" (the service says {result.server_reason})." if result.server_reason else "."))
    if result.renewed:
        print("A renewed term exists: call fetch() to get it.")
    return 0 if result.state == "VALID" else 1


if __name__ == "__main__":
    sys.exit(main())
