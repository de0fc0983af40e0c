"""Public noise schedules: functions of public parameters only (pure DP, zCDP, public trees)."""
