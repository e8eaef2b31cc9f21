int nanort_placeholder;
