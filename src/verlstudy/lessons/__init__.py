"""One package per lesson (lNN_topic); each imports kit, common and itself, never another lesson."""
