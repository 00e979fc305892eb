"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

Why: (say in a line or two what this change is for; docs/migrations.md)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
% if imports:
${imports}
% endif

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    """Nod's schema only moves forward: restore a backup taken before the upgrade instead."""
    raise NotImplementedError("Nod's schema only moves forward; restore a backup taken before the upgrade.")
