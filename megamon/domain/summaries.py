"""The summary of one resource's history: provisioning, interruptions, recoveries, up and
down time. Durations are integer nanoseconds, like Go's ``time.Duration``; JSON keys are the
Go megamon's."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class ProvisioningState(StrEnum):
    """Where a resource is in its first coming-up; the one place these strings are defined."""

    NONE = ""
    """No valid history (no events, or a first event that is up)."""
    PROVISIONING = "provisioning"
    SUCCESS = "success"
    FAILED = "failed"


class Summary(BaseModel):
    """Figures derived from an event record at one ``now``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    down_time_initial: int = Field(0, alias="downTimeProvisioned")
    interruption_count: int = Field(0, alias="interruptionCount")
    recovery_count: int = Field(0, alias="recoveryCount")
    down_time: int = Field(0, alias="downTime")
    up_time: int = Field(0, alias="upTime")
    total_down_time_between_recovery: int = Field(0, alias="totalDownTimeBetweenRecovery")
    total_up_time_between_interruption: int = Field(0, alias="totalUpTimeBetweenInterruption")
    latest_down_time_between_recovery: int = Field(0, alias="latestDownTimeBetweenRecovery")
    latest_up_time_between_interruption: int = Field(0, alias="latestUpTimeBetweenInterruption")
    mean_down_time_between_recovery: int = Field(0, alias="meanDownTimeBetweenRecovery")
    mean_up_time_between_interruption: int = Field(0, alias="meanUpTimeBetweenInterruption")
    provisioning_duration: int = Field(0, alias="provisioningDuration")
    provisioning_state: ProvisioningState = Field(ProvisioningState.NONE, alias="provisioningState")


EMPTY_SUMMARY = Summary()
