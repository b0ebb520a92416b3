#include "upstream-stub/dataset.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "widget_gateway/common/json_writer.hpp"

namespace wg::stub {
namespace {

// ---------------------------------------------------------------------------------------------
// Deterministic randomness: splitmix64, keyed by (seed, widget index, stream).

constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Independent streams per purpose, so that changing how one part is generated does not shift
// the others.
enum class Stream : std::uint64_t { id = 1, plan = 2, render = 3, review_id = 4 };

class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t index, Stream stream)
      : state_(mix(mix(mix(seed) + index) + static_cast<std::uint64_t>(stream))) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(state_);
  }
  // Uniform in [0, n); the modulo bias is irrelevant for test data.
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  // True with probability percent / 100.
  bool percent(unsigned p) { return below(100) < p; }
  template <class T, std::size_t N>
  const T& pick(const std::array<T, N>& items) {
    return items[below(N)];
  }

 private:
  std::uint64_t state_;
};

void append_hex(std::string& out, std::uint64_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i) out.push_back(kHex[(value >> (4 * i)) & 0xF]);
}

// Mongo-ObjectId-like: 4 bytes of seconds, then 8 bytes of hash.
std::string object_id(std::uint32_t seconds, std::uint64_t hash) {
  std::string id;
  id.reserve(24);
  append_hex(id, seconds, 8);
  append_hex(id, hash, 16);
  return id;
}

// 2025-06-01T00:00:00Z: the data set's "now", fixed so that output never depends on the clock.
constexpr std::int64_t kDataNow = 1748736000;

std::string iso8601(std::int64_t epoch_seconds) {
  using namespace std::chrono;
  const sys_seconds t{seconds{epoch_seconds}};
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss hms{t - day};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.000Z", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Vocabulary.

struct Named {
  std::string_view ru;
  std::string_view latin;
};

constexpr std::array<Named, 15> kKinds = {{{"Стоматология", "dent"},
                                           {"Кофейня", "coffee"},
                                           {"Салон красоты", "beauty"},
                                           {"Автосервис", "auto"},
                                           {"Клиника", "clinic"},
                                           {"Фитнес-клуб", "fitness"},
                                           {"Ресторан", "rest"},
                                           {"Пекарня", "bakery"},
                                           {"Ветклиника", "vet"},
                                           {"Барбершоп", "barber"},
                                           {"Цветочный магазин", "flowers"},
                                           {"Школа английского", "english"},
                                           {"Химчистка", "clean"},
                                           {"Детский центр", "kids"},
                                           {"Гостиница", "hotel"}}};

constexpr std::array<Named, 18> kBrands = {{{"Улыбка", "ulybka"},
                                            {"Зерно", "zerno"},
                                            {"Шарм", "sharm"},
                                            {"Мотор", "motor"},
                                            {"Здоровье", "zdorovie"},
                                            {"Энергия", "energiya"},
                                            {"Пушкин", "pushkin"},
                                            {"Колос", "kolos"},
                                            {"Айболит", "aibolit"},
                                            {"Борода", "boroda"},
                                            {"Ромашка", "romashka"},
                                            {"Лингва", "lingva"},
                                            {"Чистюля", "chistyulya"},
                                            {"Солнышко", "solnyshko"},
                                            {"Волга", "volga"},
                                            {"Северное сияние", "siyanie"},
                                            {"Добрый доктор", "dobry-doktor"},
                                            {"Мята", "myata"}}};

constexpr std::array<std::string_view, 14> kStreets = {"Ленина",      "Пушкинской",
                                                       "Гагарина",    "Мира",
                                                       "Советской",   "Тверской",
                                                       "Невском",     "Садовой",
                                                       "Лесной",      "Октябрьской",
                                                       "Профсоюзной", "Арбате",
                                                       "Кирова",      "Комсомольском проспекте"};

constexpr std::array<std::string_view, 18> kMaleNames = {
    "Александр", "Дмитрий", "Максим", "Сергей",  "Андрей", "Алексей", "Артём",    "Илья", "Кирилл",
    "Михаил",    "Никита",  "Иван",   "Евгений", "Павел",  "Роман",   "Владимир", "Олег", "Игорь"};

constexpr std::array<std::string_view, 18> kFemaleNames = {
    "Анна", "Мария",     "Елена", "Ольга",  "Наталья",  "Татьяна", "Ирина", "Екатерина", "Светлана",
    "Юлия", "Анастасия", "Дарья", "Ксения", "Виктория", "Полина",  "Алина", "Людмила",   "Галина"};

// Male forms; all end in -ов/-ев/-ёв/-ин, so the female form appends "а".
constexpr std::array<std::string_view, 32> kSurnames = {
    "Иванов",  "Смирнов",  "Кузнецов", "Попов",    "Васильев", "Петров",  "Соколов",  "Михайлов",
    "Новиков", "Фёдоров",  "Морозов",  "Волков",   "Алексеев", "Лебедев", "Семёнов",  "Егоров",
    "Павлов",  "Козлов",   "Степанов", "Николаев", "Орлов",    "Макаров", "Никитин",  "Захаров",
    "Зайцев",  "Соловьёв", "Борисов",  "Королёв",  "Ильин",    "Сорокин", "Медведев", "Журавлёв"};

constexpr std::array<std::string_view, 15> kPositive = {
    "Отличное место, всем рекомендую!",
    "Очень вежливый и внимательный персонал.",
    "Были здесь уже несколько раз, всегда всё на высоте.",
    "Цены адекватные, качество отличное.",
    "Спасибо за профессионализм и тёплый приём!",
    "Записались онлайн, приняли точно по времени.",
    "Уютная атмосфера, чисто и аккуратно.",
    "Результатом полностью довольны.",
    "Обязательно вернёмся ещё.",
    "Администратор всё подробно объяснила и помогла с выбором.",
    "Сделали быстро и качественно, никаких нареканий.",
    "Лучшее место в районе, проверено временем.",
    "Детям тоже очень понравилось.",
    "Удобное расположение, рядом есть парковка.",
    "Отдельное спасибо мастеру — золотые руки!"};

constexpr std::array<std::string_view, 6> kNeutral = {
    "В целом неплохо, но пришлось подождать минут двадцать.",
    "Качество нормальное, цены немного завышены.",
    "Есть свои плюсы и минусы.",
    "Ожидали большего, но в целом приемлемо.",
    "Персонал приветливый, но в зале было шумно.",
    "Парковка неудобная, а в остальном всё в порядке."};

constexpr std::array<std::string_view, 8> kNegative = {
    "К сожалению, остались недовольны обслуживанием.",
    "Записали на одно время, а приняли на час позже.",
    "Цены выросли, а качество упало.",
    "Администратор был груб и не захотел разбираться.",
    "Больше сюда не придём.",
    "Заказ перепутали, пришлось ждать повторно.",
    "По телефону обещали одно, на месте оказалось другое.",
    "Грязно и душно, не рекомендую."};

// Texts that exercise JSON escaping: quotes, backslashes, tabs.
constexpr std::array<std::string_view, 3> kQuoted = {
    "Менеджер сказал: \"всё будет готово завтра\".",
    "Заказывали набор \"Семейный\" — всем понравилось.",
    "На двери табличка \"Открыто\", а внутри никого."};
constexpr std::array<std::string_view, 3> kBackslashed = {
    "Смайлик от администратора: ¯\\_(ツ)_/¯", "В приложении путь C:\\Users\\Фото не открывается.",
    "Оценка: 5\\5, без вариантов."};
constexpr std::array<std::string_view, 7> kEmoji = {"😊", "👍", "❤️", "🔥🔥🔥", "🙏", "😡", "🦷✨"};

// Where each platform's location pages live; the numeric part is drawn per source.
constexpr std::array<std::string_view, kPlatformCount> kSourcePrefix = {
    "https://2gis.ru/moscow/firm/",
    "https://yandex.ru/maps/org/",
    "https://www.avito.ru/brands/",
    "https://zoon.ru/msk/place/",
    "https://vk.com/topic-",
    "https://prodoctorov.ru/moskva/lpu/",
    "https://otzovik.com/reviews/place_",
    "https://www.google.com/maps/place/?cid=",
    "https://yandex.ru/sprav/"};

// ---------------------------------------------------------------------------------------------
// JSON helpers (compact, UTF-8 raw).

void key(std::string& out, std::string_view name) {
  json::append_string(out, name);
  out.push_back(':');
}
void str_field(std::string& out, std::string_view name, std::string_view value) {
  key(out, name);
  json::append_string(out, value);
  out.push_back(',');
}
void num_field(std::string& out, std::string_view name, std::uint64_t value) {
  key(out, name);
  out += std::to_string(value);
  out.push_back(',');
}
void bool_field(std::string& out, std::string_view name, bool value) {
  key(out, name);
  out += value ? "true" : "false";
  out.push_back(',');
}
// Replaces the trailing ',' of a field list with `close`.
void close_with(std::string& out, char close) {
  if (!out.empty() && out.back() == ',') {
    out.back() = close;
  } else {
    out.push_back(close);
  }
}

// Mean rating rounded to one decimal, written with one decimal ("4.0", "0.0").
std::string rating_text(std::uint64_t sum, std::uint64_t count) {
  const std::uint64_t tenths = count == 0 ? 0 : (sum * 10 + count / 2) / count;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

// ---------------------------------------------------------------------------------------------
// Generation.

struct ReviewRecord {
  std::uint8_t platform;
  std::optional<unsigned> rating;
};

std::string person_name(Rng& rng) {
  const bool female = rng.percent(50);
  const std::string_view first = female ? rng.pick(kFemaleNames) : rng.pick(kMaleNames);
  std::string surname{rng.pick(kSurnames)};
  if (female) surname += "а";
  const auto form = rng.below(10);
  if (form < 6) return std::string(first) + " " + surname;
  if (form < 8)
    return std::string(first) + " " + surname.substr(0, 2) + ".";  // one Cyrillic letter
  return std::string(first);
}

std::string review_message(Rng& rng, std::optional<unsigned> rating) {
  std::string text;
  const auto sentences = 1 + rng.below(4);
  for (std::uint64_t i = 0; i < sentences; ++i) {
    if (i > 0) {
      const auto sep = rng.below(100);
      text += sep < 10 ? "\n" : sep < 14 ? "\n\n" : " ";
    }
    const unsigned r = rating.value_or(1 + static_cast<unsigned>(rng.below(5)));
    if (r >= 4) {
      text += rng.pick(kPositive);
    } else if (r == 3) {
      text += rng.pick(kNeutral);
    } else {
      text += rng.pick(kNegative);
    }
  }
  if (rng.percent(7)) text += " " + std::string(rng.pick(kQuoted));
  if (rng.percent(4)) text += " " + std::string(rng.pick(kBackslashed));
  if (rng.percent(2)) text += "\tИтог: 5 из 5.";
  if (rng.percent(10)) text += " " + std::string(rng.pick(kEmoji));
  return text;
}

unsigned draw_rating(Rng& rng) {
  const auto r = rng.below(100);
  if (r < 60) return 5;
  if (r < 78) return 4;
  if (r < 86) return 3;
  if (r < 91) return 2;
  return 1;
}

std::string source_url(std::uint64_t seed, std::size_t index, std::uint8_t platform) {
  const auto h = mix(mix(seed ^ 0x50c) + index * kPlatformCount + platform);
  std::string url{kSourcePrefix[platform]};
  url += std::to_string(70000001000000000ULL + h % 1000000000ULL);
  return url;
}

// Display settings: not specified upstream beyond "objects"; these mimic a review widget's.
void append_display_settings(std::string& out, Rng& rng, const WidgetPlan& plan) {
  static constexpr std::array<std::string_view, 3> kThemes = {"light", "dark", "auto"};
  static constexpr std::array<std::string_view, 4> kLayouts = {"slider", "grid", "list", "masonry"};
  static constexpr std::array<std::string_view, 6> kColors = {"#1a73e8", "#ff6b00", "#2e7d32",
                                                              "#8e24aa", "#d81b60", "#00897b"};
  key(out, "customSettings");
  out.push_back('{');
  str_field(out, "theme", rng.pick(kThemes));
  str_field(out, "layout", rng.pick(kLayouts));
  str_field(out, "language", "ru");
  bool_field(out, "showHeader", true);
  bool_field(out, "showRating", true);
  bool_field(out, "showReviewAmount", true);
  bool_field(out, "showSources", rng.percent(80));
  bool_field(out, "showDate", rng.percent(90));
  bool_field(out, "showAuthorPhoto", rng.percent(85));
  bool_field(out, "showImages", rng.percent(70));
  bool_field(out, "hideEmptyReviews", rng.percent(40));
  bool_field(out, "hideNegative", rng.percent(20));
  num_field(out, "minRating", 1 + rng.below(4));
  num_field(out, "reviewsPerPage", 5 + 5 * rng.below(4));
  num_field(out, "textLength", 150 + 50 * rng.below(6));
  bool_field(out, "autoplay", rng.percent(50));
  num_field(out, "autoplaySpeed", 3000 + 1000 * rng.below(5));
  str_field(out, "sortBy", "date");
  str_field(out, "dateFormat", "DD.MM.YYYY");
  str_field(out, "headerText", "Отзывы наших клиентов");
  str_field(out, "readMoreText", "Читать полностью");
  str_field(out, "buttonText", "Оставить отзыв");
  str_field(out, "emptyText", "Пока нет отзывов");
  str_field(out, "moreButtonText", "Показать ещё");
  str_field(out, "badgeText", "Рейтинг на основе отзывов");
  str_field(out, "ownerAnswerLabel", "Ответ компании");
  str_field(out, "locale", "ru-RU");
  str_field(out, "timezone", "Europe/Moscow");
  bool_field(out, "showPoweredBy", rng.percent(60));
  key(out, "platformsOrder");
  out.push_back('[');
  for (const auto& [platform, count] : plan.platforms) {
    json::append_string(out, kPlatforms[platform]);
    out.push_back(',');
  }
  close_with(out, ']');
  close_with(out, '}');
  out.push_back(',');

  const auto primary = rng.pick(kColors);
  key(out, "customStyles");
  out.push_back('{');
  str_field(out, "fontFamily", "Inter, Arial, sans-serif");
  str_field(out, "fontSize", "14px");
  str_field(out, "titleFontSize", "22px");
  str_field(out, "primaryColor", primary);
  str_field(out, "starColor", "#ffc107");
  str_field(out, "textColor", "#222222");
  str_field(out, "secondaryTextColor", "#757575");
  str_field(out, "backgroundColor", "#ffffff");
  str_field(out, "cardBackgroundColor", "#f7f7f9");
  str_field(out, "cardBorderColor", "#e0e0e0");
  str_field(out, "cardBorderRadius", std::to_string(4 * rng.below(5)) + "px");
  str_field(out, "cardShadow", "0 1px 3px rgba(0,0,0,0.12)");
  str_field(out, "cardPadding", "16px");
  str_field(out, "gap", "12px");
  str_field(out, "buttonColor", primary);
  str_field(out, "buttonTextColor", "#ffffff");
  str_field(out, "maxWidth", "1200px");
  str_field(out, "linkColor", primary);
  str_field(out, "headerBackgroundColor", "#fafafa");
  str_field(out, "ratingFontSize", "32px");
  str_field(out, "lineHeight", "1.5");
  str_field(out, "avatarSize", std::to_string(32 + 8 * rng.below(3)) + "px");
  str_field(out, "customCss", "");
  close_with(out, '}');
  out.push_back(',');

  key(out, "layoutSettings");
  out.push_back('{');
  num_field(out, "columnsDesktop", 2 + rng.below(3));
  num_field(out, "columnsTablet", 2);
  num_field(out, "columnsMobile", 1);
  bool_field(out, "showArrows", true);
  bool_field(out, "showDots", rng.percent(50));
  bool_field(out, "loop", true);
  close_with(out, '}');
  out.push_back(',');
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::optional<std::size_t> platform_index(std::string_view code) {
  for (std::size_t i = 0; i < kPlatforms.size(); ++i) {
    if (kPlatforms[i] == code) return i;
  }
  return std::nullopt;
}

WidgetPlan plan_widget(std::uint64_t seed, std::size_t index) {
  WidgetPlan plan;
  // Seconds part ascends with the index, so ids are unique within a data set by construction.
  const auto base_seconds = static_cast<std::uint32_t>(0x5f000000u + mix(seed) % 0x08000000u);
  plan.id = object_id(base_seconds + static_cast<std::uint32_t>(index),
                      mix(mix(seed ^ 0x1d) + index + static_cast<std::uint64_t>(Stream::id)));

  if (index == 1) return plan;  // fixed shape: no sources, no reviews
  if (index == 2) {             // fixed shape: 12 googleMap reviews
    plan.platforms.emplace_back(static_cast<std::uint8_t>(*platform_index("googleMap")), 12);
    plan.total_reviews = 12;
    return plan;
  }

  Rng rng(seed, index, Stream::plan);
  std::size_t linked;
  std::uint32_t total;
  if (index == 0) {  // fixed shape: 700 reviews over 3..5 platforms
    linked = 3 + rng.below(3);
    total = 700;
  } else {
    const auto k = rng.below(100);
    linked = k < 35 ? 1 : k < 65 ? 2 : k < 85 ? 3 : k < 95 ? 4 : 5;
    const auto t = rng.below(100);
    total = static_cast<std::uint32_t>(t < 6    ? 0
                                       : t < 76 ? 1 + rng.below(150)
                                       : t < 92 ? 150 + rng.below(150)
                                                : 300 + rng.below(701));
  }

  std::array<std::uint8_t, kPlatformCount> order{};
  std::iota(order.begin(), order.end(), std::uint8_t{0});
  for (std::size_t i = 0; i < linked; ++i) {  // partial Fisher-Yates
    std::swap(order[i], order[i + rng.below(kPlatformCount - i)]);
  }
  std::array<std::uint64_t, kPlatformCount> weights{};
  std::uint64_t weight_sum = 0;
  for (std::size_t i = 0; i < linked; ++i) weight_sum += weights[i] = 1 + rng.below(10);
  std::uint32_t assigned = 0;
  for (std::size_t i = 0; i < linked; ++i) {
    const auto count = static_cast<std::uint32_t>(total * weights[i] / weight_sum);
    plan.platforms.emplace_back(order[i], count);
    assigned += count;
  }
  plan.platforms.front().second += total - assigned;
  plan.total_reviews = total;
  return plan;
}

RenderedWidget render_widget(std::uint64_t seed, std::size_t index, const WidgetPlan& plan,
                             std::int64_t day) {
  const std::int64_t data_now = kDataNow + day * 86400;
  Rng rng(seed, index, Stream::render);

  // Reviews first: the widget's aggregates are computed from them.
  std::vector<std::uint8_t> platforms;
  platforms.reserve(plan.total_reviews);
  for (const auto& [platform, count] : plan.platforms)
    platforms.insert(platforms.end(), count, platform);
  for (std::size_t i = platforms.size(); i > 1; --i) {
    std::swap(platforms[i - 1], platforms[rng.below(i)]);
  }

  std::vector<std::string> reviews;
  reviews.reserve(platforms.size());
  std::array<std::uint64_t, 6> stars{};  // by score 1..5
  std::array<std::uint64_t, kPlatformCount> platform_sum{}, platform_rated{};
  std::int64_t when = data_now - static_cast<std::int64_t>(rng.below(2 * 86400));
  for (std::size_t k = 0; k < platforms.size(); ++k) {
    const std::uint8_t platform = platforms[k];
    const std::string_view code = kPlatforms[platform];
    when -= 600 + static_cast<std::int64_t>(rng.below(3 * 86400));  // newest first
    const auto hash =
        mix(mix(mix(seed) + index) + k * 0x10001 + static_cast<std::uint64_t>(Stream::review_id));
    const std::string id = object_id(static_cast<std::uint32_t>(when), hash);

    std::optional<unsigned> rating;
    if (rng.percent(93)) rating = draw_rating(rng);
    const bool has_message = rng.percent(88);
    const bool has_images = rng.percent(15);
    const bool has_date = rng.percent(96);

    std::string out;
    out.reserve(512);
    out.push_back('{');
    str_field(out, "_id", id);
    str_field(out, "name", person_name(rng));
    str_field(out, "photo",
              rng.percent(15)
                  ? std::string("https://cdn.widget-reviews.example/avatars/default.png")
                  : "https://cdn.widget-reviews.example/avatars/" + std::string(code) + "/" +
                        id.substr(8) + ".jpg");
    if (has_message) str_field(out, "message", review_message(rng, rating));
    if (has_images) {
      key(out, "images");
      out.push_back('[');
      const auto n = 1 + rng.below(3);
      for (std::uint64_t j = 0; j < n; ++j) {
        json::append_string(out, "https://cdn.widget-reviews.example/images/" + std::string(code) +
                                     "/" + id + "_" + std::to_string(j) + ".jpg");
        out.push_back(',');
      }
      close_with(out, ']');
      out.push_back(',');
    }
    if (rating) {
      num_field(out, "rating", *rating);
      ++stars[*rating];
      platform_sum[platform] += *rating;
      ++platform_rated[platform];
    }
    if (has_date) str_field(out, "date", iso8601(when));
    str_field(out, "src", source_url(seed, index, platform) + "/reviews/" + id);
    str_field(out, "type", code);
    close_with(out, '}');
    reviews.push_back(std::move(out));
  }

  // The widget body.
  const Named& kind = rng.pick(kKinds);
  const Named& brand = rng.pick(kBrands);
  const std::string_view street = rng.pick(kStreets);
  std::string title{kind.ru};
  if (rng.percent(10)) {  // some owners type straight quotes
    title += " \"" + std::string(brand.ru) + "\"";
  } else {
    title += " «" + std::string(brand.ru) + "» на " + std::string(street);
  }

  std::string body;
  body.reserve(4096);
  body.push_back('{');
  str_field(body, "_id", plan.id);
  str_field(body, "title", title);
  const std::string host = std::string(brand.latin) + "-" + std::string(kind.latin) + ".ru";
  str_field(body, "url", "https://" + host);
  std::uint64_t all_sum = 0, all_rated = 0;
  for (std::size_t s = 1; s <= 5; ++s) {
    all_sum += s * stars[s];
    all_rated += stars[s];
  }
  key(body, "totalRating");
  body += rating_text(all_sum, all_rated);
  body.push_back(',');
  num_field(body, "totalReviewAmount", plan.total_reviews);
  key(body, "reviewAmount");
  body.push_back('{');
  for (const auto& [platform, count] : plan.platforms) num_field(body, kPlatforms[platform], count);
  close_with(body, '}');
  body.push_back(',');
  key(body, "reviewStars");
  body.push_back('{');
  static constexpr std::array<std::string_view, 5> kStarNames = {"one", "two", "three", "four",
                                                                 "five"};
  for (std::size_t s = 1; s <= 5; ++s) num_field(body, kStarNames[s - 1], stars[s]);
  close_with(body, '}');
  body.push_back(',');
  for (const auto& [platform, count] : plan.platforms) {
    key(body, std::string(kPlatforms[platform]) + "Rating");
    body += rating_text(platform_sum[platform], platform_rated[platform]);
    body.push_back(',');
  }
  key(body, "sources");
  body.push_back('[');
  for (const auto& [platform, count] : plan.platforms) {
    body.push_back('{');
    str_field(body, "type", kPlatforms[platform]);
    str_field(body, "url", source_url(seed, index, platform));
    str_field(body, "updatedAt",
              iso8601(data_now - static_cast<std::int64_t>(rng.below(36 * 3600))));
    close_with(body, '}');
    body.push_back(',');
  }
  close_with(body, ']');
  body.push_back(',');
  append_display_settings(body, rng, plan);
  str_field(body, "widgetType", "reviews");
  str_field(body, "status", "active");
  str_field(body, "accountId", object_id(0x5e000000u, mix(seed ^ index ^ 0xacc)));
  key(body, "allowedDomains");
  body += "[";
  json::append_string(body, host);
  body += ",";
  json::append_string(body, "www." + host);
  body += "],";
  str_field(body, "createdAt",
            iso8601(kDataNow - 86400 * static_cast<std::int64_t>(400 + index % 1000)));
  str_field(body, "updatedAt", iso8601(data_now - static_cast<std::int64_t>(rng.below(86400))));
  close_with(body, '}');

  return RenderedWidget(std::move(body), std::move(reviews), std::move(platforms));
}

// ---------------------------------------------------------------------------------------------

RenderedWidget::RenderedWidget(std::string body, std::vector<std::string> reviews,
                               std::vector<std::uint8_t> review_platforms)
    : body_(std::move(body)), reviews_(std::move(reviews)) {
  bytes_ = sizeof(*this) + body_.capacity() + reviews_.capacity() * sizeof(std::string);
  for (std::size_t i = 0; i < reviews_.size(); ++i) {
    by_platform_[review_platforms[i]].push_back(static_cast<std::uint32_t>(i));
    bytes_ += reviews_[i].capacity() + sizeof(std::uint32_t);
  }
}

std::size_t RenderedWidget::review_count(std::optional<std::size_t> platform) const {
  return platform ? by_platform_[*platform].size() : reviews_.size();
}

std::string RenderedWidget::page(std::size_t skip, std::size_t limit,
                                 std::optional<std::size_t> platform) const {
  const std::vector<std::uint32_t>* order = platform ? &by_platform_[*platform] : nullptr;
  const std::size_t n = order ? order->size() : reviews_.size();
  if (skip >= n || limit == 0) return "[]";
  const std::size_t end = skip + std::min(limit, n - skip);
  auto element = [&](std::size_t i) -> const std::string& {
    return reviews_[order ? (*order)[i] : i];
  };
  std::size_t size = 2 + (end - skip - 1);
  for (std::size_t i = skip; i < end; ++i) size += element(i).size();
  std::string out;
  out.reserve(size);
  out.push_back('[');
  for (std::size_t i = skip; i < end; ++i) {
    if (i != skip) out.push_back(',');
    out += element(i);
  }
  out.push_back(']');
  return out;
}

// ---------------------------------------------------------------------------------------------

Dataset::Dataset(std::uint64_t seed, std::size_t widget_count, std::size_t cache_bytes)
    : seed_(seed), cache_budget_(cache_bytes), cache_(widget_count) {
  plans_.reserve(widget_count);
  for (std::size_t i = 0; i < widget_count; ++i) plans_.push_back(plan_widget(seed, i));
  index_by_id_.reserve(widget_count);
  for (std::size_t i = 0; i < widget_count; ++i) index_by_id_.emplace(plans_[i].id, i);
}

std::optional<std::size_t> Dataset::find(std::string_view id) const {
  const auto it = index_by_id_.find(id);
  if (it == index_by_id_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<const RenderedWidget> Dataset::rendered(std::size_t index) const {
  {
    std::lock_guard lock(cache_mutex_);
    if (cache_[index]) return cache_[index];
  }
  const std::int64_t day = day_.load();
  auto fresh =
      std::make_shared<const RenderedWidget>(render_widget(seed_, index, plans_[index], day));
  std::lock_guard lock(cache_mutex_);
  if (day != day_.load()) return fresh;     // the day moved on meanwhile: not kept
  if (cache_[index]) return cache_[index];  // another thread rendered it meanwhile
  cache_[index] = fresh;
  cache_order_.push_back(index);
  cache_bytes_ += fresh->bytes();
  while (cache_bytes_ > cache_budget_ && cache_order_.size() > 1) {
    const auto victim = cache_order_.front();
    cache_order_.pop_front();
    cache_bytes_ -= cache_[victim]->bytes();
    cache_[victim].reset();  // requests still holding it keep it alive
  }
  return fresh;
}

void Dataset::set_day(std::int64_t day) const {
  std::lock_guard lock(cache_mutex_);
  day_.store(day);
  for (auto& widget : cache_) widget.reset();
  cache_order_.clear();
  cache_bytes_ = 0;
}

std::size_t Dataset::render_all() const {
  std::size_t rendered_count = 0;
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    {
      std::lock_guard lock(cache_mutex_);
      if (cache_bytes_ >= cache_budget_) break;
    }
    rendered(i);
    ++rendered_count;
  }
  return rendered_count;
}

std::string Dataset::listing(std::optional<std::size_t> limit) const {
  const std::size_t n = std::min(limit.value_or(plans_.size()), plans_.size());
  std::string out;
  out.reserve(n * 120 + 2);
  out.push_back('[');
  for (std::size_t i = 0; i < n; ++i) {
    const WidgetPlan& plan = plans_[i];
    out.push_back('{');
    str_field(out, "id", plan.id);
    num_field(out, "totalReviewAmount", plan.total_reviews);
    key(out, "reviewAmount");
    out.push_back('{');
    for (const auto& [platform, count] : plan.platforms)
      num_field(out, kPlatforms[platform], count);
    close_with(out, '}');
    out.push_back('}');
    out.push_back(',');
  }
  close_with(out, ']');
  return out;
}

}  // namespace wg::stub
