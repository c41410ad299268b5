"""Knowledge distilled from episodes and the people who rule on it: the review queue, reflection,
the share ceremony, decay, patterns, preparation for a new task, execution timelines."""
