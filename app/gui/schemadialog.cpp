#include "schemadialog.h"

#include "timeformat.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

namespace rpcscope {

namespace {
const char *const kFiles = "decode/protoFiles";
const char *const kPaths = "decode/importPaths";

QStringList items(const QListWidget *list)
{
    QStringList out;
    for (int i = 0; i < list->count(); ++i)
        out << list->item(i)->text();
    return out;
}

void addUnique(QListWidget *list, const QStringList &entries)
{
    for (const QString &e : entries)
        if (list->findItems(e, Qt::MatchExactly).isEmpty()) list->addItem(e);
}
} // namespace

SchemaDialog::SchemaDialog(SchemaDialogHooks hooks, QWidget *parent)
    : QDialog(parent), m_hooks(std::move(hooks))
{
    setWindowTitle(QStringLiteral("Load .proto files"));
    auto *v = new QVBoxLayout(this);

    // A list with Add and Remove buttons beside it.
    auto listRow = [&](const QString &title, const QString &tip, QListWidget **list, auto onAdd) {
        auto *label = new QLabel(title, this);
        label->setToolTip(tip);
        v->addWidget(label);
        auto *h = new QHBoxLayout;
        *list = new QListWidget(this);
        (*list)->setSelectionMode(QAbstractItemView::ExtendedSelection);
        (*list)->setToolTip(tip);
        label->setBuddy(*list);
        h->addWidget(*list, 1);
        auto *buttons = new QVBoxLayout;
        auto *add = new QPushButton(QStringLiteral("Add…"), this);
        auto *remove = new QPushButton(QStringLiteral("Remove"), this);
        connect(add, &QPushButton::clicked, this, onAdd);
        QListWidget *l = *list;
        connect(remove, &QPushButton::clicked, this, [l] { qDeleteAll(l->selectedItems()); });
        buttons->addWidget(add);
        buttons->addWidget(remove);
        buttons->addStretch();
        h->addLayout(buttons);
        v->addLayout(h);
    };
    listRow(QStringLiteral("&Files (.proto)"),
            QStringLiteral("The .proto files that define your services; what they import is loaded too"),
            &m_files, [this] {
                const QStringList picked = QFileDialog::getOpenFileNames(
                    this, QStringLiteral("Add .proto files"), QString(),
                    QStringLiteral("Protocol buffers (*.proto);;All files (*)"));
                addUnique(m_files, picked);
            });
    listRow(
        QStringLiteral("&Import paths"),
        QStringLiteral("Directories imports are resolved in, as protoc's -I (in this order); a file's own "
                       "directory is searched last. google/protobuf/*.proto need none."),
        &m_paths, [this] {
            const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Add an import path"));
            if (!dir.isEmpty()) addUnique(m_paths, {dir});
        });

    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    v->addWidget(m_status);
    m_errors = new QPlainTextEdit(this);
    m_errors->setReadOnly(true);
    m_errors->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_errors->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_errors->setMaximumHeight(140);
    m_errors->hide();
    v->addWidget(m_errors);

    auto *box = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton *loadButton = box->addButton(QStringLiteral("&Load"), QDialogButtonBox::AcceptRole);
    loadButton->setDefault(true);
    connect(box, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(loadButton, &QPushButton::clicked, this, [this] {
        if (load()) accept();
    });
    v->addWidget(box);

    QSettings settings;
    setFiles(settings.value(QLatin1String(kFiles)).toStringList());
    setImportPaths(settings.value(QLatin1String(kPaths)).toStringList());
    m_status->setText(m_hooks.summary());
    resize(640, 460);
}

QStringList SchemaDialog::files() const
{
    return items(m_files);
}

QStringList SchemaDialog::importPaths() const
{
    return items(m_paths);
}

void SchemaDialog::setFiles(const QStringList &files)
{
    m_files->clear();
    addUnique(m_files, files);
}

void SchemaDialog::setImportPaths(const QStringList &paths)
{
    m_paths->clear();
    addUnique(m_paths, paths);
}

QString SchemaDialog::errorText() const
{
    return m_errors->isVisible() || !m_errors->toPlainText().isEmpty() ? m_errors->toPlainText() : QString();
}

bool SchemaDialog::load()
{
    if (files().isEmpty()) {
        m_status->setText(QStringLiteral("Add at least one .proto file."));
        return false;
    }
    // Remembered even when it fails: the next attempt starts from what was typed.
    QSettings settings;
    settings.setValue(QLatin1String(kFiles), files());
    settings.setValue(QLatin1String(kPaths), importPaths());
    QStringList errors;
    const bool ok = m_hooks.loadProtos(files(), importPaths(), &errors);
    m_errors->setPlainText(errors.join(QLatin1Char('\n')));
    m_errors->setVisible(!ok);
    m_status->setText(ok ? m_hooks.summary()
                         : QStringLiteral("%1; what did load is in use. %2")
                               .arg(counted(errors.size(), "problem"))
                               .arg(m_hooks.summary()));
    return ok;
}

} // namespace rpcscope
