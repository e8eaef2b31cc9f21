/* Links nanort from a parent project: a NULL model def is refused by name. */
#include <nanort/nanort.h>
#include <stdio.h>

int main(void) {
  nanort_model* model = NULL;
  nanort_status status;
  nanort_status_code code = nanort_model_load(NULL, nanort_allocator_system(), &model, &status);
  printf("consumer: %s: %s\n", nanort_status_code_name(code), status.message);
  return code == NANORT_INVALID_ARGUMENT ? 0 : 1;
}
