#include "entry_forms.hpp"

#include <utility>

namespace wg::serving {

EntryForms::EntryForms(CacheTier& cache, Clock& clock)
    : cache_(cache),
      clock_(clock),
      budget_(compress::kOnDemandBytesPerSecond, compress::kOnDemandBurstBytes),
      files_(cache::BodyFiles::for_process()) {}

std::shared_ptr<const cache::Entry> EntryForms::with_coding(
    const std::string& key, std::shared_ptr<const cache::Entry> entry, std::string_view coding) {
  if (!cache::lacks_codings(*entry)) return entry;
  for (const auto& [token, bytes] : entry->variants) {
    if (token == coding) return entry;
  }
  if (entry->body.size() < compress::kMinCompressBytes) return entry;
  if (!budget_.take(entry->body.size(), clock_.steady_now())) return entry;
  auto encoded = compress::encode(coding, entry->body);
  if (!encoded) return entry;
  auto coded = cache::with_variant(*entry, std::string(coding), std::move(*encoded));
  // In place of the copy L1 holds (or of none), charged with the variant; never over a newer.
  const auto held = cache_.l1().get(key);
  if (!held || held == entry) cache_.store_local(key, coded);
  return coded;
}

std::shared_ptr<const cache::Entry> EntryForms::with_body_file(
    const std::string& key, std::shared_ptr<const cache::Entry> entry) {
  if (entry->body.size() < cache::kBodyFileMinBytes || entry->body_file) return entry;
  if (!file_asks_.asked_before(entry)) return entry;
  // Only for the copy L1 holds: it is charged for the file, and no newer copy is replaced.
  if (cache_.l1().get(key) != entry) return entry;
  auto file = files_->make(entry->body);
  if (!file) return entry;
  auto filed = cache::with_body_file(*entry, std::move(file));
  cache_.store_local(key, filed);  // charged again, with the file
  return filed;
}

}  // namespace wg::serving
