// Runs one registered QtTest class (`ui_test TestModels`), or all of them without an argument.
#include <QApplication>
#include <QTest>
#include <cstdio>

#include "ui_test_util.h"

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("TemperTests"));
  QApplication::setApplicationName(QStringLiteral("ui_test"));
  auto& reg = temper::ui::uitest::registry();
  std::vector<std::string> which;
  QStringList rest{QString::fromLocal8Bit(argv[0])};
  for (int i = 1; i < argc; ++i) {
    if (reg.count(argv[i])) which.push_back(argv[i]);
    else rest << QString::fromLocal8Bit(argv[i]);  // QtTest's own options (-v2, a test function)
  }
  if (which.empty())
    for (const auto& [name, f] : reg) which.push_back(name);
  int failures = 0;
  for (const auto& name : which) {
    auto obj = reg.at(name)();
    failures += QTest::qExec(obj.get(), rest);
  }
  return failures ? 1 : 0;
}
