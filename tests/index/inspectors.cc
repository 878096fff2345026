// The inspector of each persistent index engine, by name. See tree_report.h.
#include <map>
#include <string>

#include "tests/fptree/fptree_inspect.h"
#include "tests/index/tree_report.h"
#include "tests/nvtree/nvtree_inspect.h"
#include "tests/radix/radix_inspect.h"
#include "tests/wbtree/wbtree_inspect.h"

namespace pmcached::engine::testing {
namespace {

TreeInspector radix_inspector(std::string_view engine) {
  return [decode = radix::testing::decoder_for(engine)](const pm::PmRegion& region,
                                                        std::uint64_t root) {
    return radix::testing::inspect_tree(region, root, decode);
  };
}

const std::map<std::string, TreeInspector, std::less<>>& inspectors() {
  static const std::map<std::string, TreeInspector, std::less<>> table = {
      // The radix engines (tests/radix: radix_inspect.h, one decoder per node layout).
      {"wort", radix_inspector("wort")},
      {"woart", radix_inspector("woart")},
      {"artcow", radix_inspector("artcow")},
      // The B-trees (tests/fptree, tests/wbtree, tests/nvtree: one reader per layout).
      {"fptree", fptree::testing::inspect_fptree},
      {"wbtree",
       [](const pm::PmRegion& region, std::uint64_t root) {
         return wbtree::testing::inspect_wbtree(region, root);  // a live tree: heads checked
       }},
      {"nvtree", nvtree::testing::inspect_nvtree},
  };
  return table;
}

}  // namespace

TreeInspector inspector_for(std::string_view engine) {
  const auto it = inspectors().find(engine);
  return it == inspectors().end() ? TreeInspector{} : it->second;
}

}  // namespace pmcached::engine::testing
